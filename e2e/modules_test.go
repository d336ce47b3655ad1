package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestProofImagesAreTheProductDefaults: the stack is started without
// image versions of its own, so the bundles name the product's defaults
// (artifacts.Default) and the registry must serve those tags. A
// bump on one side only is a proof whose pods never pull.
func TestProofImagesAreTheProductDefaults(t *testing.T) {
	defaults := productDefaults(t)
	for field, want := range map[string]string{
		"CoreDNSVersion": corednsVersion, "PauseVersion": pauseVersion, "FlannelVersion": flannelVersion,
	} {
		if defaults[field] != want {
			errorf(t, "artifacts.Default's %s is %q, the proof serves %q", field, defaults[field], want)
		}
	}
}

// productDefaults reads the string fields of the literal artifacts.Default
// returns, from the product's source (this module does not import it).
func productDefaults(t *testing.T) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot(), "internal", "artifacts", "artifacts.go"), nil, 0)
	if err != nil {
		fatal(t, err)
	}
	out := map[string]string{}
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Default" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			key, kok := kv.Key.(*ast.Ident)
			lit, lok := kv.Value.(*ast.BasicLit)
			if kok && lok && lit.Kind == token.STRING {
				out[key.Name], _ = strconv.Unquote(lit.Value)
			}
			return true
		})
	}
	if len(out) == 0 {
		fatalf(t, "internal/artifacts/artifacts.go: no Default literal found")
	}
	return out
}
