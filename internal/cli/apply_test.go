package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// demoFile is a cluster file of count control-plane nodes at version.
func demoFile(count int, version string) apitypes.ClusterFile {
	return apitypes.ClusterFile{Kind: "Cluster", Name: "demo", KubernetesVersion: version, SubnetID: 1, ZoneID: 1, CNI: "cilium", KeyAlgorithm: "ecdsa-p256",
		ControlPlane:  apitypes.ClusterFileCP{Count: count, InstanceType: "e2.medium", ImageID: 1},
		EtcdSnapshots: &apitypes.ClusterFileSnapshots{Interval: "1h"}}
}

// applyScene is cluster 5, applied as demo at one node of v1.35.4, and a
// file asking three nodes of v1.36.3.
func applyScene(t *testing.T) (*fakeAPI, string) {
	f := newFakeAPI(t)
	c := cluster(5, "active", "ready", "ready")
	c.ControlPlaneCount = 1
	kept := demoFile(1, "v1.35.4")
	c.Spec, c.Actual = &kept, &kept
	f.on("GET /clusters", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{c}}))
	f.on("POST /clusters/5/upgrade", ok(apitypes.UpgradeAnswer{Plan: upgradePlan()}))
	f.on("PATCH /clusters/5", reply{status: 202, body: mustJSON(apitypes.ControlPlaneScaling{ID: 3, ClusterID: 5, FromCount: 1, ToCount: 3, State: "scaling"})})
	f.on("PUT /clusters/5/spec", ok(c))
	path := filepath.Join(t.TempDir(), "demo.yaml")
	want := demoFile(3, "v1.36.3")
	if err := os.WriteFile(path, []byte(mustJSON(want)), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, path
}

// A file's control-plane count and version are steps of the plan: the
// scaling first, the upgrade last, its chain and gates from the server's
// dry run; a dry run begins neither.
func TestApplyPlansTheScalingAndTheUpgrade(t *testing.T) {
	f, path := applyScene(t)
	r := runCLI(t, f, nil, "apply", "-f", path, "--dry-run")
	r.want(t, 0)
	r.wantOut(t, `Plan for cluster demo (cluster 5, exk8s-1-5):
  ~ scale control plane demo: control-plane nodes 1 → 3, one etcd member at a time
  = keep spec demo: the file
  ~ upgrade demo: kubernetes v1.35.4 → v1.36.3, one control-plane node at a time, then each pool by surge
Plan: cluster 5 v1.35.4 → v1.36.3 (surge 1, drain timeout 300s)
Gates:
  nodes_ready      passed: passed
  deprecated_apis  FAILED (overridden): requested in the last day: flowschemas
  etcd_snapshot    pending: taken before the first node moves
Control plane, one at a time by replacement:
  1. cp-0.cluster-5.internal (vm 10, v1.35.4)
Pool web, by surge of 1: 1 workers`)
	calls := f.callsTo("POST /clusters/5/upgrade")
	if len(calls) != 1 || !strings.Contains(calls[0].body, `"dry_run":true`) || len(f.callsTo("PATCH /clusters/5")) != 0 {
		t.Fatalf("a dry run began something: %+v", f.calls)
	}
}

// Without --wait the scaling begins and the upgrade waits for it (one
// operation per cluster at a time), saying how to go on.
func TestApplyLeavesTheUpgradeWaitingForTheScaling(t *testing.T) {
	f, path := applyScene(t)
	r := runCLI(t, f, nil, "apply", "-f", path, "--yes")
	r.want(t, 0)
	r.wantLines(t, "done: scale control plane demo", "done: keep spec demo",
		"waiting: upgrade demo begins once the control plane's scaling is done (one operation at a time): apply the file again then, or apply it with --wait to follow the scaling and begin the upgrade")
	if calls := f.callsTo("PATCH /clusters/5"); len(calls) != 1 || calls[0].body != `{"control_plane_count":3}` {
		t.Fatalf("PATCH calls %+v", calls)
	}
	if calls := f.callsTo("POST /clusters/5/upgrade"); len(calls) != 1 {
		t.Fatalf("the upgrade began beside the scaling: %+v", calls)
	}
}

// --wait follows the scaling until every node is ready, then begins the
// upgrade and follows it until it is done.
func TestApplyWaitFollowsTheScalingThenTheUpgrade(t *testing.T) {
	f, path := applyScene(t)
	scaled := cluster(5, "active", "ready", "ready", "ready", "ready")
	scaled.ControlPlaneCount = 3
	f.on("GET /clusters/5", ok(scaled))
	begun := apitypes.Upgrade{ID: 2, ClusterID: 5, From: "v1.35.4", To: "v1.36.3", PassTo: "v1.36.3", State: "upgrading"}
	f.on("POST /clusters/5/upgrade", ok(apitypes.UpgradeAnswer{Plan: upgradePlan()}), reply{status: 202, body: mustJSON(apitypes.UpgradeAnswer{Plan: upgradePlan(), Upgrade: &begun})})
	done := begun
	done.State = "done"
	f.on("GET /clusters/5/upgrade", ok(done))
	r := runCLI(t, f, nil, "apply", "-f", path, "--yes", "--wait")
	r.want(t, 0)
	r.wantLines(t, "the control plane of cluster 5 has 3 nodes, every one ready", "done: scale control plane demo",
		"upgrade 2 of cluster 5 to v1.36.3 is upgrading", "done: upgrade demo")
	if i, j := strings.Index(r.stdout, "has 3 nodes"), strings.Index(r.stdout, "upgrade 2 of cluster 5"); i < 0 || j < i {
		t.Fatalf("the upgrade began before the scaling was done:\n%s", r.stdout)
	}
	if calls := f.callsTo("POST /clusters/5/upgrade"); len(calls) != 2 || strings.Contains(calls[1].body, `"dry_run":true`) {
		t.Fatalf("upgrade calls %+v", calls)
	}
}

// A version the cluster cannot move to refuses the plan with the
// upgrade's own code, and nothing is done.
func TestApplyRefusesAVersionTheUpgradeRefuses(t *testing.T) {
	f, path := applyScene(t)
	f.on("POST /clusters/5/upgrade", reply{status: 422, body: `{"error":{"code":"invalid_upgrade","message":"v1.34.0 is not a supported version","request_id":"r"}}`})
	r := runCLI(t, f, nil, "apply", "-f", path, "--yes")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "the file cannot be applied: its kubernetes_version: invalid_upgrade: v1.34.0 is not a supported version") {
		t.Fatalf("stderr %q", r.stderr)
	}
	if len(f.callsTo("PATCH /clusters/5"))+len(f.callsTo("PUT /clusters/5/spec")) != 0 {
		t.Fatal("a refused plan did something")
	}
}

// A second apply of the file while its upgrade runs begins no other: the
// plan names the live upgrade, and --wait follows it to its end.
func TestApplyFollowsTheLiveUpgradeOfTheSameVersion(t *testing.T) {
	f, path := applyScene(t)
	c := cluster(5, "active", "ready", "ready", "ready", "ready")
	c.ControlPlaneCount = 3
	kept := demoFile(3, "v1.36.3")
	c.Spec, c.Actual = &kept, ptr(demoFile(3, "v1.35.4"))
	f.on("GET /clusters", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{c}}))
	f.on("GET /clusters/5", ok(c))
	f.on("POST /clusters/5/upgrade", reply{status: 409, body: `{"error":{"code":"upgrade_in_progress","message":"upgrade 2 to v1.36.3 is upgrading","request_id":"r"}}`})
	live := apitypes.Upgrade{ID: 2, ClusterID: 5, From: "v1.35.4", To: "v1.36.3", PassTo: "v1.36.3", State: "upgrading"}
	done := live
	done.State = "done"
	f.on("GET /clusters/5/upgrade", ok(live), ok(live), ok(done))
	r := runCLI(t, f, nil, "apply", "-f", path, "--yes", "--wait")
	r.want(t, 0)
	r.wantLines(t, "upgrade 2 to v1.36.3 is already upgrading: apply begins no other, and --wait follows it",
		"upgrade 2 of cluster 5 to v1.36.3 is already upgrading", "13:00:00 done (pass to v1.36.3): cp-0.cluster-5.internal v1.35.4, cp-1.cluster-5.internal v1.35.4, cp-2.cluster-5.internal v1.35.4",
		"done: upgrade demo")
	if len(f.callsTo("PATCH /clusters/5")) != 0 {
		t.Fatal("the count the cluster has was scaled again")
	}
}
