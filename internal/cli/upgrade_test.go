package cli

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
)

func upgradePlan() apitypes.UpgradePlan {
	return apitypes.UpgradePlan{ClusterID: 5, From: "v1.35.4", To: "v1.36.3", Passes: []apitypes.UpgradePass{{From: "v1.35.4", To: "v1.36.3"}},
		Gates: []apitypes.UpgradeGate{{Name: "nodes_ready", Passed: true, Detail: "passed"},
			{Name: "deprecated_apis", Overridden: true, Detail: "requested in the last day: flowschemas"},
			{Name: "etcd_snapshot", Pending: true, Detail: "taken before the first node moves"}},
		ControlPlane: []apitypes.PlannedNode{{Name: "cp-0.cluster-5.internal", VMID: 10, From: "v1.35.4"}},
		Pools:        []apitypes.PlannedPool{{Name: "web", Nodes: []apitypes.PlannedNode{{Name: "web-3", VMID: 20, From: "v1.35.4"}}}},
		Surge:        1, DrainTimeoutSeconds: 300}
}

// The plan comes first: --dry-run shows the chain, each gate's verdict
// and the order of the nodes, and begins nothing.
func TestUpgradeDryRunShowsThePlanOnly(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/upgrade", ok(apitypes.UpgradeAnswer{Plan: upgradePlan()}))
	r := runCLI(t, f, nil, "upgrade", "cluster", "5", "--to", "v1.36.3", "--dry-run", "--allow-deprecated-apis")
	r.want(t, 0)
	r.wantLines(t, "Plan: cluster 5 v1.35.4 → v1.36.3 (surge 1, drain timeout 300s)",
		"  nodes_ready      passed: passed",
		"  deprecated_apis  FAILED (overridden): requested in the last day: flowschemas",
		"  etcd_snapshot    pending: taken before the first node moves",
		"  1. cp-0.cluster-5.internal (vm 10, v1.35.4)",
		"Pool web, by surge of 1: 1 workers")
	calls := f.callsTo("POST /clusters/5/upgrade")
	if len(calls) != 1 || !strings.Contains(calls[0].body, `"dry_run":true`) || !strings.Contains(calls[0].body, `"allow_deprecated_apis":true`) {
		t.Fatalf("calls %+v, want one dry run with the override", calls)
	}
}

// Without --dry-run the upgrade begins after the plan; --wait follows
// each node's version until it is done, and a paused upgrade ends the wait
// naming the node and how to go on.
func TestUpgradeWaitFollowsEachNode(t *testing.T) {
	f := newFakeAPI(t)
	begun := apitypes.Upgrade{ID: 2, ClusterID: 5, From: "v1.35.4", To: "v1.36.3", PassTo: "v1.36.3", State: "upgrading"}
	f.on("POST /clusters/5/upgrade", ok(apitypes.UpgradeAnswer{Plan: upgradePlan()}), reply{status: 202, body: mustJSON(apitypes.UpgradeAnswer{Plan: upgradePlan(), Upgrade: &begun})})
	done := begun
	done.State = "done"
	f.on("GET /clusters/5/upgrade", ok(begun), ok(done))
	old, moved := cluster(5, "active", "ready", "ready"), cluster(5, "active", "ready", "ready")
	moved.Nodes[0].KubernetesVersion = "v1.36.3"
	f.on("GET /clusters/5", ok(old), ok(moved))
	r := runCLI(t, f, nil, "upgrade", "cluster", "5", "--to", "v1.36.3", "--wait")
	r.want(t, 0)
	r.wantLines(t, "upgrade 2 of cluster 5 to v1.36.3 is upgrading",
		"13:00:00 upgrading (pass to v1.36.3): cp-0.cluster-5.internal v1.35.4",
		"13:00:00 done (pass to v1.36.3): cp-0.cluster-5.internal v1.36.3")

	paused := begun
	paused.State, paused.PausedNode, paused.StateReason = "paused", "cp-7.cluster-5.internal", "health gate: the replacement failed"
	f.on("POST /clusters/5/upgrade", ok(apitypes.UpgradeAnswer{Plan: upgradePlan()}), reply{status: 202, body: mustJSON(apitypes.UpgradeAnswer{Plan: upgradePlan(), Upgrade: &begun})})
	f.on("GET /clusters/5/upgrade", ok(paused))
	r = runCLI(t, f, nil, "upgrade", "cluster", "5", "--to", "v1.36.3", "--wait")
	if r.code == 0 || !strings.Contains(r.stderr, "paused at cp-7.cluster-5.internal") || !strings.Contains(r.stderr, "k8sapi upgrade resume 5") {
		t.Fatalf("a paused upgrade: exit %d\n%s", r.code, r.stderr)
	}
}

// get versions lists the release table as the API answers it; describe
// shows the cluster's upgrade.
func TestVersionsAndTheUpgradeAreShown(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /kubernetes-versions", ok(apitypes.KubernetesVersions{Default: "v1.35.4", Versions: []apitypes.KubernetesVersion{
		{Version: "v1.35.4", EtcdVersion: "v3.6.10", CoreDNSVersion: "v1.13.1", PauseVersion: "3.10.1", UpgradesTo: []string{"v1.36.3"}, Conformance: "168/168"},
		{Version: "v1.36.3", EtcdVersion: "v3.6.10", CoreDNSVersion: "v1.14.2", PauseVersion: "3.10.2", UpgradesTo: []string{}}}}))
	runCLI(t, f, nil, "get", "versions").wantOut(t, `
VERSION   DEFAULT   ETCD      COREDNS   PAUSE    UPGRADES-TO   CONFORMANCE
v1.35.4   yes       v3.6.10   v1.13.1   3.10.1   v1.36.3       168/168
v1.36.3   <none>    v3.6.10   v1.14.2   3.10.2   <none>        <none>`)

	f.on("GET /clusters/5", ok(cluster(5, "active", "ready", "ready")))
	f.on("GET /clusters/5/nodes/10/bootstrap", ok(apitypes.NodeBootstrapDetail{ClusterID: 5, VMID: 10, NodeName: "cp-0.cluster-5.internal", Phase: "ready"}))
	f.on("GET /clusters/5/upgrade", ok(apitypes.Upgrade{ID: 2, ClusterID: 5, From: "v1.35.4", To: "v1.36.3", PassTo: "v1.36.3",
		State: "paused", PausedNode: "cp-7.cluster-5.internal", StateReason: "health gate: the replacement failed"}))
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	r.wantLines(t, "Upgrade:",
		"  State:                paused (v1.35.4 → v1.36.3, pass to v1.36.3)",
		"  Reason:               health gate: the replacement failed",
		"  Paused at:            cp-7.cluster-5.internal")
}
