package templaterules

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const projectRoot = "../.."

// `sam build` runs make build-<LogicalId> for every function (BuildMethod
// makefile) from the project root, so what it packages is what that
// target builds: the function's own directory, the whole module around it,
// reproducibly (-trimpath, no build id).
func TestEveryFunctionBuildsThroughTheMakefile(t *testing.T) {
	for id, fn := range loadTemplate(t).ofType(functionType) {
		m := fn.Metadata
		if m["BuildMethod"] != "makefile" || m["ContextPath"] != "." || m["ProjectRootDirectory"] != "." {
			t.Errorf("%s: Metadata %v, want BuildMethod makefile from the project root", id, m)
		}
		out, err := makeCmd(projectRoot, "-n", "build-"+id, "ARTIFACTS_DIR=out").CombinedOutput()
		if err != nil {
			t.Errorf("%s: make -n build-%s: %v\n%s", id, id, err, out)
			continue
		}
		for _, want := range []string{"./" + fn.Properties["CodeUri"].(string), "-trimpath", "-buildid=", `-o "out/bootstrap"`} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: make build-%s runs %q, which lacks %q", id, id, out, want)
			}
		}
	}
}

// The binary built here and the one built from a fresh copy of the tree,
// elsewhere, with an empty Go build cache, are the same bytes; and a change
// under internal/ (not in the function's CodeUri, which is all SAM's
// cache would hash) changes the binary. HealthFunction: the smallest.
func TestBuildsMatchTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a function twice, once with an empty cache")
	}
	clone := copyTrackedTree(t)
	here := build(t, projectRoot, "")
	fresh := build(t, clone, t.TempDir())
	if here != fresh {
		t.Fatal("HealthFunction built from a fresh copy of the tree with an empty cache differs from the one built here")
	}
	doc := filepath.Join(clone, "internal", "apidocs", "openapi.json")
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := build(t, clone, ""); changed == fresh {
		t.Fatal("a change under internal/ left HealthFunction's binary as it was")
	}
}

// build runs make build-HealthFunction in root (with GOCACHE when given)
// and returns the binary's SHA-256.
func build(t *testing.T, root, gocache string) [32]byte {
	t.Helper()
	dir := t.TempDir()
	cmd := makeCmd(root, "-s", "build-HealthFunction", "ARTIFACTS_DIR="+dir)
	if gocache != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+gocache)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-HealthFunction in %s: %v\n%s", root, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func makeCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("make", args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	return cmd
}

// copyTrackedTree copies the files git tracks, as they are in the working
// tree, to a new directory: what a fresh clone of this commit holds.
func copyTrackedTree(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", projectRoot, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dst := t.TempDir()
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		copyFile(t, filepath.Join(projectRoot, string(name)), filepath.Join(dst, string(name)))
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	in, err := os.Open(src)
	if os.IsNotExist(err) {
		return // deleted in the working tree
	}
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil || info.IsDir() {
		return // a submodule or a directory entry
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, info.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}
