// Package clusterspec is what an operator asks for: the body of
// POST /clusters (Request, validated into a Spec) and of a node pool's
// create and scale (PoolRequest, ScaleRequest), each validated by one
// table of rules that collects every problem with its field, fingerprinted
// so a reused Idempotency-Key with another body is refused; the cluster
// file (apitypes.ClusterFile: `k8sapi apply -f`, PUT /clusters/{id}/spec),
// held to those same rules in the file's own field names (ValidateFile),
// and apply's plan over a cluster as it is (Plan: the steps, in order, or
// the fields no operation changes); and the naming rules of clusters and
// nodes.
//
// In: decoded request bodies and cluster files, a cluster row. Out: specs,
// plans, names, or an *apperr.Error (400) naming every bad field.
package clusterspec
