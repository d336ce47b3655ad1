// Package upgrade is a cluster's rolling Kubernetes upgrade (POST
// /clusters/{id}/upgrade, docs/UPGRADES.md), a durable operation on the
// engine (package operation), the operations table's kind upgrade
// (store.KindUpgrade, its lease on its operation): its plan (the
// release table's one-minor passes, the order of the nodes), its preflight
// gates (each refused with its own code), then the pre-upgrade etcd
// snapshot, taken and its upload verified before the first node moves,
// and each control-plane node one at a time by a replacement
// (controlplane) whose new node is rendered at the pass's version, with a
// health gate after each. Once every API server is at the pass's version
// the cluster's version and artifact record move to it, then each pool's
// workers move by surge (new workers ready before old ones retire). A
// failed gate
// pauses the upgrade with a reason naming the node; the operator resumes
// or aborts it, and an abort before the last control-plane node moved
// brings the control plane back by the same replacement path.
//
// In: an org's principal, a cluster, an UpgradeRequest; the reconciler's
// claimed clusters. Out: apitypes.UpgradeAnswer and apitypes.Upgrade,
// engine results, rows written under the lease of the upgrade's operation.
package upgrade
