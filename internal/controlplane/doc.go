// Package controlplane is a cluster's control-plane nodes: the steps that
// make them (VMs, addresses, identities from the cert table) for a
// founding and for a replacement, the cluster's DNS name that points at
// them, and the replacement of one node (POST /clusters/{id}/nodes/{vm_id}/
// replace), a durable operation on the engine (package operation): the new
// node is made, joins etcd as a learner and reports ready, then the old VM
// is deleted; refused when it could lose etcd's quorum. Upgrades and
// control-plane scaling are the kinds to come here.
//
// In: an org's principal, a cluster, a VM id; the reconciler's claimed
// replacements' clusters. Out: apitypes.NodeReplacement, engine results,
// rows written under the replacement operation's lease.
package controlplane
