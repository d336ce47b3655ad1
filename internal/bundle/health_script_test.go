package bundle

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeChecks puts a curl on PATH that answers the kubelet's /healthz and
// the etcd member's /health as given (every other URL goes to the real
// curl, so the report reaches the fake VM) and a kubectl whose /readyz
// fails with readyz (passes when ""), and whose /metrics answers the
// metrics text in the file metrics (refused as RBAC would when "").
func fakeChecks(t *testing.T, etcdAnswer, readyz string, metrics ...string) string {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("curl", `for a in "$@"; do case "$a" in
  http://127.0.0.1:10248/healthz) echo ok; exit 0 ;;
  https://127.0.0.1:2379/health) echo '`+etcdAnswer+`'; exit 0 ;;
esac; done
exec `+curl+` "$@"
`)
	kubectl := "echo ok\n"
	if readyz != "" {
		kubectl = "echo '" + readyz + "' >&2; exit 1\n"
	}
	answer := `echo 'Error from server (Forbidden): forbidden: User "exk8s:control-plane-taint" cannot get path "/metrics"' >&2; exit 1`
	if len(metrics) > 0 {
		answer = "exec cat " + metrics[0]
	}
	write("kubectl", `case "$*" in
  *--raw=/metrics*) [[ "$*" == *control-plane-taint.kubeconfig* ]] || { echo "not the control-plane identity: $*" >&2; exit 1; }
    `+answer+` ;;
esac
`+kubectl)
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// A control-plane node's report names its three checks: the kubelet's
// /healthz, its etcd member's /health ({"health":"true"} only) and its API
// server's /readyz, each failing one with what the node saw; it goes to
// the node's own health route with its proofs.
func TestHealthScriptReportsEveryCheck(t *testing.T) {
	_, vm, root := renewalNode(t)
	out, err := runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"false","reason":"NOSPACE"}`, "[-]etcd failed: reason withheld"))
	if err != nil {
		t.Fatalf("health report: %v\n%s", err, out)
	}
	if len(vm.healthReports) != 1 {
		t.Fatalf("%d reports, want 1\n%s", len(vm.healthReports), out)
	}
	checks, _ := vm.healthReports[0]["checks"].(map[string]any)
	check := func(name string) map[string]any { c, _ := checks[name].(map[string]any); return c }
	if check("kubelet")["ok"] != true || check("etcd")["ok"] != false || check("apiserver")["ok"] != false ||
		!strings.Contains(check("etcd")["message"].(string), "NOSPACE") || !strings.Contains(check("apiserver")["message"].(string), "etcd failed") {
		t.Errorf("report %v", vm.healthReports[0])
	}
	if _, err := runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"true"}`, "")); err != nil || len(vm.healthReports) != 2 {
		t.Fatalf("second report: %v, %d reports", err, len(vm.healthReports))
	}
	for _, name := range []string{"kubelet", "etcd", "apiserver"} {
		if c, _ := vm.healthReports[1]["checks"].(map[string]any)[name].(map[string]any); c["ok"] != true || c["message"] != nil {
			t.Errorf("%s: %v, want ok without a message", name, c)
		}
	}
	if len(vm.received()) != 0 {
		t.Errorf("the health report reported a bootstrap phase: %v", vm.received())
	}
}

// metricsText is an API server's /metrics: the deprecated APIs' gauge at
// 1 for three APIs (labels in any order; the core group; a subresource),
// at 0 for one, one whose names k8sapi would refuse, and other series,
// one whose name begins with the gauge's.
const metricsText = `# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="flowcontrol.apiserver.k8s.io",removed_release="1.32",resource="flowschemas",subresource="",version="v1beta3"} 1
apiserver_requested_deprecated_apis{group="",removed_release="",resource="componentstatuses",subresource="",version="v1"} 1
apiserver_requested_deprecated_apis{removed_release="1.36",version="v1beta1",subresource="scale",resource="deployments",group="apps"} 1
apiserver_requested_deprecated_apis{group="x.k8s.io",removed_release="1.40",resource="zeroes",subresource="",version="v1beta1"} 0
apiserver_requested_deprecated_apis{group="bad group",removed_release="1.36",resource="r",subresource="",version="v1"} 1
apiserver_requested_deprecated_apis_other{group="y.k8s.io",removed_release="1.36",resource="r",subresource="",version="v1"} 1
apiserver_request_total{code="200",resource="pods"} 5
`

// A control-plane node reports the deprecated APIs its API server's
// /metrics (read as its control-plane identity) names at 1, sorted, with
// their names; when the read fails, or k8sapi refuses them (a k8sapi from
// before them: 400), the report still goes, without them.
func TestHealthScriptReportsDeprecatedAPIs(t *testing.T) {
	_, vm, root := renewalNode(t)
	metrics := filepath.Join(t.TempDir(), "metrics")
	if err := os.WriteFile(metrics, []byte(metricsText), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"true"}`, "", metrics)); err != nil || len(vm.healthReports) != 1 {
		t.Fatalf("health report: %v, %d reports\n%s", err, len(vm.healthReports), out)
	}
	got, _ := json.Marshal(vm.healthReports[0]["deprecated_apis"])
	want := `[{"group":"","removed_release":"","resource":"componentstatuses","subresource":"","version":"v1"},` +
		`{"group":"apps","removed_release":"1.36","resource":"deployments","subresource":"scale","version":"v1beta1"},` +
		`{"group":"flowcontrol.apiserver.k8s.io","removed_release":"1.32","resource":"flowschemas","subresource":"","version":"v1beta3"}]`
	if string(got) != want {
		t.Errorf("deprecated_apis = %s\nwant %s", got, want)
	}
	out, err := runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"true"}`, ""))
	if err != nil || len(vm.healthReports) != 2 || !strings.Contains(out, "deprecated APIs could not be read") || !strings.Contains(out, "Forbidden") {
		t.Fatalf("metrics refused: %v, %d reports\n%s", err, len(vm.healthReports), out)
	}
	if _, named := vm.healthReports[1]["deprecated_apis"]; named || vm.healthReports[1]["checks"] == nil {
		t.Errorf("a report after a failed metrics read: %v, want its checks without deprecated_apis", vm.healthReports[1])
	}
	vm.refuseDeprecated = true
	out, err = runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"true"}`, "", metrics))
	if err != nil || len(vm.healthReports) != 4 || !strings.Contains(out, "refused the deprecated APIs") {
		t.Fatalf("refused by k8sapi: %v, %d reports\n%s", err, len(vm.healthReports), out)
	}
	if _, named := vm.healthReports[3]["deprecated_apis"]; named || vm.healthReports[3]["checks"] == nil {
		t.Errorf("the report sent again: %v, want its checks without deprecated_apis", vm.healthReports[3])
	}
}

// A node keeps the drain bound the running upgrade that retires it tells
// in its health answers (DrainHeader), for its drain at power-off; an
// answer without it removes it (the bundle's default again). A worker
// and a control-plane node (an upgrade replaces it) alike.
func TestHealthScriptKeepsTheDrainBoundItIsTold(t *testing.T) {
	h := newWorkerHost(t)
	bound := filepath.Join(h.root, DrainBoundFile)
	path := fakeChecks(t, "", "")
	h.vm.healthHeaders = map[string]string{DrainHeader: "45"}
	if out, err := runNodeScript(t, h.vm, h.root, HealthScript, path); err != nil {
		t.Fatalf("health report: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(bound); err != nil || strings.TrimSpace(string(got)) != "45" {
		t.Fatalf("after an answer telling 45: %q, %v; want 45 kept in %s", got, err, DrainBoundFile)
	}
	h.vm.healthHeaders = nil
	if out, err := runNodeScript(t, h.vm, h.root, HealthScript, path); err != nil {
		t.Fatalf("health report: %v\n%s", err, out)
	}
	if _, err := os.Stat(bound); !os.IsNotExist(err) {
		t.Errorf("after an answer telling none, the bound is still kept: %v", err)
	}

	_, vm, root := renewalNode(t)
	vm.healthHeaders = map[string]string{DrainHeader: "45"}
	if out, err := runNodeScript(t, vm, root, HealthScript, fakeChecks(t, `{"health":"true"}`, "")); err != nil {
		t.Fatalf("control-plane health report: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(root, DrainBoundFile)); err != nil || strings.TrimSpace(string(got)) != "45" {
		t.Errorf("a control-plane node told 45 kept %q, %v; want 45", got, err)
	}
}

// A control-plane node told that a pending etcd snapshot was handed to it
// (SnapshotHeader) starts taking it at once; without the header it does
// not, and a worker, which takes no snapshots, never does.
func TestHealthScriptStartsTheSnapshotItIsHanded(t *testing.T) {
	const starts = "hands this node an etcd snapshot"
	_, vm, root := renewalNode(t)
	path := fakeChecks(t, `{"health":"true"}`, "")
	if out, err := runNodeScript(t, vm, root, HealthScript, path); err != nil || strings.Contains(out, starts) {
		t.Fatalf("no snapshot handed: %v\n%s", err, out)
	}
	vm.healthHeaders = map[string]string{SnapshotHeader: SnapshotDue}
	if out, err := runNodeScript(t, vm, root, HealthScript, path); err != nil || !strings.Contains(out, starts) {
		t.Fatalf("a snapshot handed: %v, want it started\n%s", err, out)
	}
	h := newWorkerHost(t)
	h.vm.healthHeaders = map[string]string{SnapshotHeader: SnapshotDue}
	if out, err := runNodeScript(t, h.vm, h.root, HealthScript, fakeChecks(t, "", "")); err != nil || strings.Contains(out, starts) {
		t.Fatalf("a worker told of a snapshot: %v\n%s", err, out)
	}
}
