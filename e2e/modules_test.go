package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductModuleStaysLight holds the reason this module exists: the
// product's module graph never gains Kubernetes itself or the etcd server
// (the client libraries it renders for are fine).
func TestProductModuleStaysLight(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		fatalf(t, "go list -m all in the product module: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		mod, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case mod == "k8s.io/kubernetes", strings.HasPrefix(mod, "go.etcd.io/etcd/server"):
			errorf(t, "the product module requires %s: it belongs in e2e/ only", mod)
		}
	}
}

// TestSuiteBuildsFromTheClusterVersion: the conformance suite's module
// and the Kubernetes components' module pin k8s.io/kubernetes and every
// staging module to the same versions, so the suite judges the version
// the cluster runs (the README's "Changing versions" bumps both).
func TestSuiteBuildsFromTheClusterVersion(t *testing.T) {
	kube, suite := pins(t, "components/kube/go.mod"), pins(t, "components/conformance/go.mod")
	if len(kube) == 0 || kube["k8s.io/kubernetes"] == "" {
		fatalf(t, "components/kube/go.mod: no k8s.io/kubernetes pin found")
	}
	for mod, v := range kube {
		if !strings.HasPrefix(mod, "k8s.io/") {
			continue
		}
		if suite[mod] != v {
			errorf(t, "%s: the components build %s, the suite %q", mod, v, suite[mod])
		}
	}
}

// pins reads a go.mod's k8s.io/kubernetes requirement and its replace
// lines: module -> version.
func pins(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e2eDir, path))
	if err != nil {
		fatal(t, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[1] == "=>":
			out[f[0]] = f[3]
		case len(f) >= 2 && f[0] == "k8s.io/kubernetes":
			out[f[0]] = f[1]
		case len(f) >= 3 && f[0] == "require" && f[1] == "k8s.io/kubernetes":
			out[f[1]] = f[2]
		}
	}
	return out
}
