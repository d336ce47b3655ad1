package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
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
// the cluster runs (the README's "Changing versions" bumps both): the
// founding release in their go.mod files, the upgrade's in their module
// files for it.
func TestSuiteBuildsFromTheClusterVersion(t *testing.T) {
	upgradeMod := "kubernetes-" + upgradeRelease.Kubernetes + ".mod"
	for _, file := range []string{"go.mod", upgradeMod} {
		kube, suite := pins(t, "components/kube/"+file), pins(t, "components/conformance/"+file)
		if len(kube) == 0 || kube["k8s.io/kubernetes"] == "" {
			fatalf(t, "components/kube/%s: no k8s.io/kubernetes pin found", file)
		}
		for mod, v := range kube {
			if !strings.HasPrefix(mod, "k8s.io/") {
				continue
			}
			if suite[mod] != v {
				errorf(t, "%s: %s: the components build %s, the suite %q", file, mod, v, suite[mod])
			}
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
	out := map[string]string{}
	for _, lit := range productLiterals(t, "artifacts.go", "Default") {
		maps.Copy(out, lit)
	}
	if len(out) == 0 {
		fatalf(t, "internal/artifacts/artifacts.go: no Default literal found")
	}
	return out
}

// productLiterals are the string fields of each composite literal in the
// body of function fn of internal/artifacts/file, outermost first.
func productLiterals(t *testing.T, file, fn string) []map[string]string {
	t.Helper()
	parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot(), "internal", "artifacts", file), nil, 0)
	if err != nil {
		fatal(t, err)
	}
	var out []map[string]string
	for _, decl := range parsed.Decls {
		if f, ok := decl.(*ast.FuncDecl); ok && f.Name.Name == fn {
			ast.Inspect(f.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					out = append(out, stringFields(lit))
				}
				return true
			})
		}
	}
	return out
}

// stringFields are a composite literal's Key: "string" elements.
func stringFields(lit *ast.CompositeLit) map[string]string {
	out := map[string]string{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, kok := kv.Key.(*ast.Ident)
		val, vok := kv.Value.(*ast.BasicLit)
		if kok && vok && val.Kind == token.STRING {
			out[key.Name], _ = strconv.Unquote(val.Value)
		}
	}
	return out
}

// TestUpgradeReleaseIsInTheProductsTable: the release the proof upgrades
// to is a row of the product's release table (internal/artifacts/
// releases.go) with the CoreDNS and pause the registry serves for it, and
// build-components.sh's module files for it pin those versions. A bump on
// one side only is an upgrade whose new nodes never pull.
func TestUpgradeReleaseIsInTheProductsTable(t *testing.T) {
	var row map[string]string
	for _, lit := range productLiterals(t, "releases.go", "Releases") {
		if lit["Kubernetes"] == upgradeRelease.Kubernetes {
			row = lit
		}
	}
	if row == nil || row["CoreDNS"] != upgradeRelease.CoreDNS || row["Pause"] != upgradeRelease.Pause {
		fatalf(t, "the product's release row for %s is %v, the proof serves CoreDNS %s and pause %s",
			upgradeRelease.Kubernetes, row, upgradeRelease.CoreDNS, upgradeRelease.Pause)
	}
	if got := pins(t, "components/kube/kubernetes-"+upgradeRelease.Kubernetes+".mod")["k8s.io/kubernetes"]; got != upgradeRelease.Kubernetes {
		errorf(t, "components/kube's module file for %s pins k8s.io/kubernetes %q", upgradeRelease.Kubernetes, got)
	}
	raw, err := os.ReadFile(filepath.Join(e2eDir, "components/coredns/coredns-"+upgradeRelease.CoreDNS+".mod"))
	if err != nil || !strings.Contains(string(raw), "require github.com/coredns/coredns "+upgradeRelease.CoreDNS+"\n") {
		errorf(t, "components/coredns's module file for %s does not require it (%v)", upgradeRelease.CoreDNS, err)
	}
}
