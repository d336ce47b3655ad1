// Package progress is what a node's bootstrap phase allows: which reports
// may move a node where (over the phase table of internal/clusterfacts), the
// bootstrap window, and the state of a cluster's bootstrap computed from its
// nodes' phases. It is also the use case of
// POST /bootstrap/control-plane/{vm_id}/status.
//
// In: a VM that passed the four proofs and its report. Out: nothing (the
// phase is recorded) or an *apperr.Error: 400 for a report that is not one,
// 404 for a VM that is no control-plane node of its org, 409 for a report
// that would move a node backwards or out of failed. docs/BOOTSTRAP-PROGRESS.md
// says why the rules are what they are.
package progress
