// Package operation is the engine every durable operation of k8sapi runs
// on: a founding, a deletion's undo, a node pool's create, scale or delete,
// a control-plane node's replacement, and the kinds to come (upgrades,
// control-plane scaling, CA rotation, remediation).
//
// A kind of operation is a Kind: its steps, how it lets go of its lease,
// and how it is undone. Every step is idempotent over the recorded state
// (it does only what is not recorded yet, and a remote create repeated
// after a lost answer carries the same idempotency token), so whoever holds
// the lease carries on from the rows alone. Drive runs the steps in order
// and ends every run in one of the Outcomes:
//
//	Done       every step ran; the last one recorded the end
//	Yielded    out of time between two side effects; released at once
//	Waiting    a step waits on the world (a node not ready yet); released
//	           until RetryAfter has passed
//	LeaseLost  another driver holds the operation; nothing more is written
//	Undone     a step failed with a cause and the kind turned it back
//	Retrying   a step failed and the kind could not (or must not) turn it
//	           back now; it recorded why, a later driver tries again
//
// Undo runs on a context detached from the driver's (the request may be
// gone, an orphan VM costs the customer money), bounded by UndoTimeout.
//
// In: a Kind, the operation's state as loaded from the rows, a deadline.
// Out: a Result; the side effects are in the rows the steps wrote.
package operation
