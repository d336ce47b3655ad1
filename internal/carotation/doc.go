// Package carotation is a cluster's CA rotation (docs/CA-ROTATION.md): a
// durable operation of kind ca-rotation on the table of operations that
// rotates any of its roots of trust (cluster CA, etcd CA, front-proxy CA,
// service-account signer) in three phases, each finished only when every
// node has applied it through its renewal call:
//
//	trusting     a new generation of each root (next) is trusted beside
//	             the current one in every trust file served
//	signing      the new generation signs (current), the old one is still
//	             trusted (previous); every leaf is re-issued under the new
//	distrusting  once every node applied signing and the longest lifetime
//	             of what the old roots signed has passed, the old leave
//	             every trust file and their sealed keys are overwritten
//
// An abort before the distrust (untrusting) steps the generations back
// the same path: the old current again, the new one trusted until every
// node re-signed under the old, then retired.
//
// In: an operator's request (Rotate, Abort), or a claimed operation (the
// reconciler's ReconcileRotation). Out: the rotation's view, or a Result;
// every step's side effect is in the rows it wrote (store's carotation.go).
package carotation
