package integration

import (
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
	stacktest.Do(t, "GET", s.APIURL+"/clusters/"+itoa(b.ClusterID), "", s.Bearer(1)).JSON(t, &v)
	if v.Spec != nil || v.Actual.EtcdSnapshots.Interval != "1h" {
		t.Fatalf("a refused file was kept: %+v %+v", v.Spec, v.Actual.EtcdSnapshots)
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
