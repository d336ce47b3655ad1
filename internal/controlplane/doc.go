// Package controlplane is a cluster's control-plane nodes: the steps that
// make them (VMs, addresses, identities from the cert table) for a
// founding and for a replacement, the cluster's DNS name that points at
// them, and the replacement of one node (POST /clusters/{id}/nodes/{vm_id}/
// replace), a durable operation on the engine (package operation): the new
// node is made, joins etcd as a learner and reports ready, then the old VM
// is deleted; refused when it could lose etcd's quorum. And the scaling of
// the control plane (PATCH /clusters/{id}), a second kind: one new member
// at a time, made by the same node steps, joining etcd as a learner
// (docs/SCALE-CONTROL-PLANE.md). Upgrades are the kind to come here.
//
// In: an org's principal, a cluster, a VM id or a count; the reconciler's
// claimed replacements' and scalings' clusters. Out: apitypes.NodeReplacement,
// apitypes.ControlPlaneScaling, engine results, rows written under the
// operation's lease (the table of operations, store.Kind*).
package controlplane
