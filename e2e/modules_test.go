package e2e

import (
	"os/exec"
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
		t.Fatalf("go list -m all in the product module: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		mod, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case mod == "k8s.io/kubernetes", strings.HasPrefix(mod, "go.etcd.io/etcd/server"):
			t.Errorf("the product module requires %s: it belongs in e2e/ only", mod)
		}
	}
}
