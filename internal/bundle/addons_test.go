package bundle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// An upgrade's addons are the founding's: at a cluster's own release each
// is byte for byte the manifest its control-plane bundle carries, in the
// order they are applied (the CNI's first, CoreDNS last) with their
// rollouts; at the next release kube-proxy and CoreDNS run that release's
// images. Cilium's and the bridge's clusters have no CNI manifest to move.
func TestAddonsAreTheBundlesManifestsAtTheRelease(t *testing.T) {
	r := newTestRenderer(t)
	for _, tc := range []struct {
		cluster func() (clusterfacts.Cluster, []clusterfacts.Node)
		want    []string
	}{
		{flannelCluster, []string{"flannel.yaml daemonset/flannel", "kube-proxy.yaml daemonset/kube-proxy", "coredns.yaml deployment/coredns"}},
		{testCluster, []string{"kube-proxy.yaml daemonset/kube-proxy", "coredns.yaml deployment/coredns"}},
		{bridgeCluster, []string{"kube-proxy.yaml daemonset/kube-proxy", "coredns.yaml deployment/coredns"}},
	} {
		c, nodes := tc.cluster()
		b, err := r.Render(loadFixtures(t).input(c, nodes, 102))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Addons(c, artifacts.Default())
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, a := range got {
			order = append(order, a.Name+" "+a.Rollout)
			if a.Content != mustFile(t, b, addonDir+"/"+a.Name) {
				t.Errorf("%s: the upgrade's %s is not the bundle's", c.CNI, a.Name)
			}
		}
		if strings.Join(order, ", ") != strings.Join(tc.want, ", ") {
			t.Errorf("%s: addons %v, want %v", c.CNI, order, tc.want)
		}
	}
	c, _ := flannelCluster()
	next, _ := artifacts.ReleaseOf("v1.36.3")
	c.KubernetesVersion = next.Kubernetes
	got, err := r.Addons(c, artifacts.Default().AtRelease(next, artifacts.Default(), c.CNI))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[1].Content, "/kube-proxy:v1.36.3") || !strings.Contains(got[2].Content, "/coredns:"+next.CoreDNS) {
		t.Errorf("the addons at v1.36.3 run kube-proxy and CoreDNS of another release:\n%s\n%s", got[1].Content, got[2].Content)
	}
}

// fakeAddonsKubectl puts a kubectl on PATH that records each call with
// its KUBECONFIG (and the first line of each file it applies), one line
// each, in calls, and fails the call that contains failOn ("" none).
func fakeAddonsKubectl(t *testing.T, failOn string) (path, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/usr/bin/env bash
echo "KUBECONFIG=${KUBECONFIG} $*" >>` + calls + `
if [[ "$1" == apply ]]; then head -n1 "$3" >>` + calls + `; fi
if [[ -n "` + failOn + `" && "$*" == *"` + failOn + `"* ]]; then echo "error: timed out waiting for the condition" >&2; exit 1; fi
`
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH"), calls
}

func addonsAnswer(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"cluster_id": 42, "upgrade_id": 3, "kubernetes_version": "v1.36.3",
		"manifests": []Addon{{Name: "kube-proxy.yaml", Rollout: "daemonset/kube-proxy", Content: "# kube-proxy at v1.36.3\n"},
			{Name: "coredns.yaml", Rollout: "deployment/coredns", Content: "# coredns v1.14.2\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Not chosen: the script asks, k8sapi answers 204, kubectl never runs and
// nothing is reported. Chosen: each manifest is applied in the answer's
// order with the addons identity's kubeconfig, then each rollout is
// waited for (bounded), then the version is reported applied. Run again
// (a lost report), it applies again: kubectl apply changes nothing twice.
func TestAddonsScriptAppliesInOrderWaitsAndReports(t *testing.T) {
	_, vm, root := renewalNode(t)
	path, calls := fakeAddonsKubectl(t, "")
	if out, err := runNodeScript(t, vm, root, AddonsScript, path); err != nil {
		t.Fatalf("not chosen: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); err == nil || len(vm.addonsReports) != 0 {
		t.Fatalf("kubectl ran, or a report was sent, with nothing to apply: %v", vm.addonsReports)
	}
	vm.addons = addonsAnswer(t)
	out, err := runNodeScript(t, vm, root, AddonsScript, path)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	used, _ := os.ReadFile(calls)
	kubeconfig := "KUBECONFIG=" + root + KubeconfigPath(addonsKubeconfigStem) + " "
	want := []string{kubeconfig + "apply -f", "# kube-proxy at v1.36.3", kubeconfig + "apply -f", "# coredns v1.14.2",
		kubeconfig + "-n kube-system rollout status daemonset/kube-proxy --timeout=300s",
		kubeconfig + "-n kube-system rollout status deployment/coredns --timeout=300s"}
	lines := strings.Split(strings.TrimSpace(string(used)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("kubectl calls:\n%s\nwant %d lines like %q", used, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("kubectl call %d: %q, want %q", i, lines[i], w)
		}
	}
	if len(vm.addonsReports) != 1 || vm.addonsReports[0]["kubernetes_version"] != "v1.36.3" || vm.addonsReports[0]["failure"] != "" {
		t.Fatalf("reports %v, want v1.36.3 applied", vm.addonsReports)
	}
	if out, err := runNodeScript(t, vm, root, AddonsScript, path); err != nil || len(vm.addonsReports) != 2 {
		t.Fatalf("run again: %v, %d reports\n%s", err, len(vm.addonsReports), out)
	}
}

// A rollout that does not finish in time is reported as the failure,
// naming what it waited for, and the run fails.
func TestAddonsScriptReportsAFailedRollout(t *testing.T) {
	_, vm, root := renewalNode(t)
	path, _ := fakeAddonsKubectl(t, "deployment/coredns")
	vm.addons = addonsAnswer(t)
	out, err := runNodeScript(t, vm, root, AddonsScript, path)
	if err == nil {
		t.Fatalf("a failed rollout ended the run well:\n%s", out)
	}
	if len(vm.addonsReports) != 1 {
		t.Fatalf("reports %v, want the failure", vm.addonsReports)
	}
	failure, _ := vm.addonsReports[0]["failure"].(string)
	if !strings.Contains(failure, "deployment/coredns") || !strings.Contains(failure, "timed out") {
		t.Errorf("failure %q, want the rollout and kubectl's words", failure)
	}
}
