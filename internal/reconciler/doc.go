// Package reconciler drives every registered kind of durable operation
// that its driver let go of or died holding, on a schedule: one claim
// statement for every kind (store.ClaimDue, the oldest due row of the
// table of operations), then the kind's handler (Reconciler.kinds: one row
// per kind, its name and its handler), and counts
// what each run did (Report).
//
// In: the wired dependencies, k8sapi's own platform token. Out: a Report;
// the operations' effects are in the rows.
package reconciler
