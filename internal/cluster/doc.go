// Package cluster is the POST /clusters use case and the cluster lifecycle
// around it (list, get, delete, restore from a snapshot), and the
// reconciler's handler of foundings and deletions (reconcile.go).
//
// In: an authenticated org, the operator's bearer token (the platform APIs
// act on the org's behalf), the request body, an optional idempotency key.
// Out: a Result (cluster id, names, VM ids, a fresh admin kubeconfig), a 202
// with what to poll when the founding outlives the request, or an
// *apperr.Error.
//
// A founding is a durable operation, not a transaction. Before anything
// remote it validates the request, fixes the cluster's artifact set
// (artifacts.go: refused with 422 artifacts_not_pinned when the nodes could
// not verify a download), makes the trust and commits the cluster row in
// state founding with its intended nodes and a lease (begin). Then the
// steps of foundingSteps run in order (security group → VMs → addresses →
// node identities → activation: the middle three are controlplane's node
// steps, the VMs vm's); the engine (package operation) runs them, each records its side effect as soon as
// it happens, every write is fenced by the lease (store.ErrLeaseLost stops
// a driver that lost it), and each step does only what is not recorded
// yet, repeating a remote create with the same idempotency token. So
// whoever holds the lease can carry on from the rows alone: the request
// drives until its answer is due and then lets go (the engine's Yielded),
// and the reconciler claims what is left (reconcile.go). A failure undoes
// everything recorded (teardown.go: VMs, then the security group), so a
// cluster ends founded whole or deleted; DNS stays best effort.
package cluster
