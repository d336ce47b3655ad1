// Package clusterspec is what an operator asks for: the body of
// POST /clusters (Request, validated into a Spec) and of a node pool's
// create and scale (PoolRequest, ScaleRequest), each validated by one
// table of rules that collects every problem with its field, fingerprinted
// so a reused Idempotency-Key with another body is refused; and the naming
// rules of clusters and nodes.
//
// In: decoded request bodies, a cluster row. Out: specs, names, or an
// *apperr.Error (400) naming every bad field.
package clusterspec
