// Package reconciler drives every registered kind of durable operation
// that its driver let go of or died holding (Reconciler.kinds: one row per
// kind, its claim statement and its handler), on a schedule, and counts
// what each run did (Report).
//
// In: the wired dependencies, k8sapi's own platform token. Out: a Report;
// the operations' effects are in the rows.
package reconciler
