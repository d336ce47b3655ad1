// Package nodepool is a cluster's worker pools: create, scale and delete
// (POST, PATCH, DELETE /clusters/{id}/node-pools[/{name}]), each a durable
// operation on the engine (package operation) whose steps make the
// workers that stay (their VMs, their addresses), remove the retiring ones
// and settle the pool; a failed create or scale-up is turned back. Workers
// make their own keys on their VMs (the bundle's worker route signs their
// CSRs), so a pool operation issues no identity.
//
// In: an org's principal, a cluster id, a validated pool request; the
// reconciler's claimed pools. Out: apitypes.NodePool (filled from the rows
// in views.go), PoolResult, engine results.
package nodepool
