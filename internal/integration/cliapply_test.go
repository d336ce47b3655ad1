package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// examplePath is the repository's example cluster file.
var examplePath = filepath.Join("..", "..", "examples", "cluster.yaml")

// apply of the example file, over the real routes: the plan shown, a
// refusal to act without --yes off a terminal, the founding with its
// pool, a second apply that plans nothing, a pool's count changed as the
// only change, the file `get cluster NAME -o yaml` prints applying as
// nothing, and the cluster deleted by its name.
func TestCLIAppliesTheExampleClusterFile(t *testing.T) {
	s := newStack(t)
	code, out, errOut := s.k8sapiCLI("apply", "-f", examplePath, "--dry-run")
	if code != 0 || !strings.Contains(out, "+ create cluster demo: 1 control-plane node(s) of e2.medium, cni cilium\n") ||
		!strings.Contains(out, "+ create pool workers: 2 worker(s) of e2.medium\n") {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = s.k8sapiCLI("apply", "-f", examplePath)
	if code != 1 || !strings.Contains(errOut, "not applied: no terminal to ask on") {
		t.Fatalf("apply without --yes off a terminal: %d\n%s", code, errOut)
	}
	if _, out, _ := s.k8sapiCLI("get", "clusters"); strings.Contains(out, "demo") {
		t.Fatalf("a dry run or a refusal founded a cluster:\n%s", out)
	}

	code, out, errOut = s.k8sapiCLI("apply", "-f", examplePath, "--yes")
	if code != 0 || !strings.Contains(out, "done: create pool workers\n") {
		t.Fatalf("apply --yes: %d\n%s\n%s\n%s", code, out, errOut, s.logs.String())
	}
	s.wantPlan(t, examplePath, "cluster demo (cluster 1, exk8s-1-1) is as the file asks: nothing to do\n")

	scaled := filepath.Join(t.TempDir(), "scaled.yaml")
	example, _ := os.ReadFile(examplePath)
	writeFile(t, scaled, []byte(strings.Replace(string(example), "    count: 2\n", "    count: 3\n", 1)))
	s.wantPlan(t, scaled, "Plan for cluster demo (cluster 1, exk8s-1-1):\n"+
		"  ~ scale pool workers: count 2 → 3\n"+
		"  = keep spec demo: the file\n")
	if code, out, errOut := s.k8sapiCLI("apply", "-f", scaled, "--yes"); code != 0 {
		t.Fatalf("scale: %d\n%s\n%s", code, out, errOut)
	}
	if _, out, _ := s.k8sapiCLI("node-pools", "get", "demo", "workers"); !strings.Contains(out, " 3 ") && !strings.Contains(out, "/3") {
		t.Fatalf("the pool was not scaled:\n%s", out)
	}

	printed := filepath.Join(t.TempDir(), "printed.yaml")
	_, doc, _ := s.k8sapiCLI("get", "cluster", "demo", "-o", "yaml")
	writeFile(t, printed, []byte(doc))
	s.wantPlan(t, printed, "cluster demo (cluster 1, exk8s-1-1) is as the file asks: nothing to do\n")

	if code, out, errOut := s.k8sapiCLI("delete", "cluster", "demo", "--wait"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete by name: %d\n%s\n%s", code, out, errOut)
	}
}

// wantPlan checks apply --dry-run of path prints exactly want.
func (s *stack) wantPlan(t *testing.T, path, want string) {
	t.Helper()
	code, out, errOut := s.k8sapiCLI("apply", "-f", path, "--dry-run")
	if code != 0 || out != want {
		t.Fatalf("apply --dry-run %s: %d\n%s\nwant:\n%s\n%s", filepath.Base(path), code, out, want, errOut)
	}
}

// PUT /clusters/{id}/spec keeps a valid file and sets its schedule; a file
// naming another live cluster's name is a 409, one asking what no
// operation changes a 400 naming the field, and neither is kept.
func TestKeepSpecRules(t *testing.T) {
	s := newStack(t)
	a, b := s.Found(1, stacktest.OneNode), s.Found(1, stacktest.OneNode)
	file := func(name, cni string) string {
		return `{"kind":"Cluster","name":"` + name + `","cni":"` + cni + `","control_plane":{"instance_type":"e2.medium","image_id":1},` +
			`"subnet_id":1,"etcd_snapshots":{"interval":"30m"}}`
	}
	keep := func(id int64, body string) stacktest.Response {
		return stacktest.Do(t, "PUT", s.APIURL+"/clusters/"+itoa(id)+"/spec", body, s.Bearer(1))
	}
	if r := keep(a.ClusterID, file("demo", "cilium")); r.Status != 200 {
		t.Fatalf("keep: %d %s", r.Status, r.Body)
	}
	var v apitypes.ClusterView
	stacktest.Do(t, "GET", s.APIURL+"/clusters/"+itoa(a.ClusterID), "", s.Bearer(1)).JSON(t, &v)
	if len(v.DNSRecords) != 1 || v.DNSRecords[0].Name != v.ControlPlaneDNSName || v.DNSRecords[0].Value == "" {
		t.Fatalf("the DNS records are not retrievable after founding: %+v", v.DNSRecords)
	}
	if v.Spec == nil || v.Spec.Name != "demo" || v.Actual == nil || v.Actual.EtcdSnapshots.Interval != "30m" || v.Actual.Name != "demo" {
		t.Fatalf("spec %+v, actual %+v", v.Spec, v.Actual)
	}
	if r := keep(b.ClusterID, file("demo", "cilium")); r.Status != 409 || r.ErrorCode(t) != "cluster_name_taken" {
		t.Fatalf("a taken name: %d %s", r.Status, r.Body)
	}
	if r := keep(b.ClusterID, file("other", "flannel")); r.Status != 400 || !strings.Contains(string(r.Body), `cni: the cluster has \"cilium\", the file asks \"flannel\"`) {
		t.Fatalf("a fixed field: %d %s", r.Status, r.Body)
	}
	counted := func(n string) string {
		return strings.Replace(file("other", "cilium"), `"control_plane":{`, `"control_plane":{"count":`+n+`,`, 1)
	}
	if r := keep(b.ClusterID, counted("2")); r.Status != 422 || r.ErrorCode(t) != "invalid_control_plane_count" {
		t.Fatalf("a count PATCH refuses: %d %s", r.Status, r.Body)
	}
	stacktest.Do(t, "GET", s.APIURL+"/clusters/"+itoa(b.ClusterID), "", s.Bearer(1)).JSON(t, &v)
	if v.Spec != nil || v.Actual.EtcdSnapshots.Interval != "1h" {
		t.Fatalf("a refused file was kept: %+v %+v", v.Spec, v.Actual.EtcdSnapshots)
	}
	// a count and a version to reach are the plan's steps, no longer refused
	if r := keep(b.ClusterID, strings.Replace(counted("3"), `{"kind"`, `{"kubernetes_version":"v1.36.3","kind"`, 1)); r.Status != 200 {
		t.Fatalf("a file asking a scaling and an upgrade: %d %s", r.Status, r.Body)
	}
}

// get images, instance-types and subnets list the compute API's catalog
// through GET /catalog, with the operator's token.
func TestCLIListsTheCatalog(t *testing.T) {
	s := newStack(t)
	for args, want := range map[string]string{
		"images":         "1    ubuntu-24.04\n",
		"instance-types": "e2.medium   2       4096 MiB\n",
		"subnets":        "1    ",
	} {
		code, out, errOut := s.k8sapiCLI("get", args)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("get %s: %d\n%s\n%s", args, code, out, errOut)
		}
	}
}

// planeFile is a cluster file named demo of count control-plane nodes at
// version ("": the deployment's), with no pools.
func planeFile(t *testing.T, count int, version string) string {
	path := filepath.Join(t.TempDir(), "demo.yaml")
	writeFile(t, path, []byte(fmt.Sprintf("kind: Cluster\nname: demo\nkubernetes_version: %q\ncontrol_plane:\n  count: %d\n  instance_type: e2.medium\n  image_id: 1\nsubnet_id: 1\n",
		version, count)))
	return path
}

// appliedDemo founds demo with one control-plane node by apply and boots
// it; it returns the cluster.
func (s *stack) appliedDemo(t *testing.T) apitypes.ClusterView {
	if code, out, errOut := s.k8sapiCLI("apply", "-f", planeFile(t, 1, ""), "--yes"); code != 0 {
		t.Fatalf("founding by apply: %d\n%s\n%s", code, out, errOut)
	}
	v := s.getCluster(t, 1)
	s.bootAll(t, v.ControlPlaneVMIDs)
	return v
}

// A file's control_plane.count is the control plane's scaling, through
// PATCH /clusters/{id}: its refusal and code for a count it refuses, the
// plan, then apply --wait following one new member at a time; a second
// apply, and the file `get cluster -o yaml` prints, plan nothing.
func TestCLIApplyScalesTheControlPlane(t *testing.T) {
	s := newStack(t)
	v := s.appliedDemo(t)
	code, _, errOut := s.k8sapiCLI("apply", "-f", planeFile(t, 2, ""), "--dry-run")
	if code != 1 || !strings.Contains(errOut, "the file cannot be applied: invalid_control_plane_count: control_plane_count must be 1, 3 or 5, not 2") {
		t.Fatalf("a count of 2: %d\n%s", code, errOut)
	}
	three := planeFile(t, 3, "")
	s.wantPlan(t, three, "Plan for cluster demo (cluster 1, exk8s-1-1):\n"+
		"  ~ scale control plane demo: control-plane nodes 1 → 3, one etcd member at a time\n"+
		"  = keep spec demo: the file\n")
	r, booted := s.driveScaling(t, v.ID, v.ControlPlaneVMIDs, "apply", "-f", three, "--yes", "--wait", "--timeout", "2m")
	if r[0] != "0" || !strings.Contains(r[1], "the control plane of cluster 1 has 3 nodes, every one ready\n") || len(booted) != 3 {
		t.Fatalf("apply --wait: exit %s, VMs %v\n%s\n%s", r[0], booted, r[1], r[2])
	}
	s.wantPlan(t, three, "cluster demo (cluster 1, exk8s-1-1) is as the file asks: nothing to do\n")
	printed := filepath.Join(t.TempDir(), "printed.yaml")
	_, doc, _ := s.k8sapiCLI("get", "cluster", "demo", "-o", "yaml")
	writeFile(t, printed, []byte(doc))
	s.wantPlan(t, printed, "cluster demo (cluster 1, exk8s-1-1) is as the file asks: nothing to do\n")
	// A shrink is the scaling too (docs/SCALE-CONTROL-PLANE.md), begun as
	// PATCH begins it.
	one := planeFile(t, 1, "")
	s.wantPlan(t, one, "Plan for cluster demo (cluster 1, exk8s-1-1):\n"+
		"  ~ scale control plane demo: control-plane nodes 3 → 1, one etcd member at a time\n"+
		"  = keep spec demo: the file\n")
	if code, out, errOut := s.k8sapiCLI("apply", "-f", one, "--yes"); code != 0 || !strings.Contains(out, "is being scaled from 3 to 1 nodes") {
		t.Fatalf("a shrink: %d\n%s\n%s", code, out, errOut)
	}
}

// A file's kubernetes_version is the upgrade, through POST
// /clusters/{id}/upgrade: the plan shows its passes and gates, apply
// begins it, and the upgrade is the server's. v1.36.3's files are not in
// the shipped manifest yet: the stack takes their published digests.
func TestCLIApplyUpgrades(t *testing.T) {
	a := stacktest.PinnedArtifacts()
	a.DigestFallback = true
	s := newStack(t, withArtifacts(a))
	v := s.appliedDemo(t)
	from, to := v.KubernetesVersion, "v1.36.3"
	newer := planeFile(t, 1, to)
	code, out, errOut := s.k8sapiCLI("apply", "-f", newer, "--dry-run")
	if code != 0 || !strings.Contains(out, "  ~ upgrade demo: kubernetes "+from+" → "+to+", one control-plane node at a time, then each pool by surge\n") ||
		!strings.Contains(out, "Plan: cluster 1 "+from+" → "+to+" (surge 1, drain timeout 300s)\n") || !strings.Contains(out, "Gates:\n") {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = s.k8sapiCLI("apply", "-f", newer, "--yes")
	if code != 0 || !strings.Contains(out, "upgrade 1 of cluster 1 to "+to+" is upgrading\n") || !strings.Contains(out, "done: upgrade demo\n") {
		t.Fatalf("apply: %d\n%s\n%s", code, out, errOut)
	}
	var u apitypes.Upgrade
	stacktest.Do(t, "GET", s.APIURL+"/clusters/1/upgrade", "", s.Bearer(1)).JSON(t, &u)
	if u.From != from || u.To != to || u.State != "upgrading" {
		t.Fatalf("the upgrade: %+v", u)
	}
}

// A file that changes both the count and the version begins the scaling
// only (one operation per cluster at a time): the upgrade waits, said so,
// and the next apply of the same file plans only the upgrade.
func TestCLIApplyBeginsTheScalingAndTheUpgradeWaits(t *testing.T) {
	s := newStack(t)
	s.appliedDemo(t)
	both := planeFile(t, 3, "v1.36.3")
	code, out, errOut := s.k8sapiCLI("apply", "-f", both, "--yes")
	if code != 0 || !strings.Contains(out, "done: scale control plane demo\n") ||
		!strings.Contains(out, "waiting: upgrade demo begins once the control plane's scaling is done (one operation at a time)") {
		t.Fatalf("apply: %d\n%s\n%s", code, out, errOut)
	}
	if r := stacktest.Do(t, "GET", s.APIURL+"/clusters/1/upgrade", "", s.Bearer(1)); r.Status != 404 {
		t.Fatalf("an upgrade began beside the scaling: %d %s", r.Status, r.Body)
	}
	if v := s.getCluster(t, 1); v.ControlPlaneCount != 3 {
		t.Fatalf("the scaling did not begin: count %d", v.ControlPlaneCount)
	}
	_, out, _ = s.k8sapiCLI("apply", "-f", both, "--dry-run")
	if !strings.HasPrefix(out, "Plan for cluster demo (cluster 1, exk8s-1-1):\n  ~ upgrade demo: kubernetes v1.35.4 → v1.36.3") || strings.Contains(out, "scale control plane") {
		t.Fatalf("the next plan:\n%s", out)
	}
}
