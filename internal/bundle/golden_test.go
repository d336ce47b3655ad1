package bundle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// goldenDir holds one directory per node; each file sits at its host path
// below it, plus bundle.json (the wire response) and userdata.sh.
const goldenDir = "testdata/golden"

func TestGolden(t *testing.T) {
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	c, nodes := testCluster()
	// A fixed artifact pin shows the manifest's shape in the goldens.
	for _, n := range nodes {
		in := fx.input(c, nodes, n.VMID)
		in.Artifacts.SHA256 = map[string]string{
			"kubelet-v1.35.4-linux-amd64": strings.Repeat("ab", 32),
		}
		b, err := r.Render(in)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{}
		for _, f := range b.Files {
			got[strings.TrimPrefix(f.Path, "/")] = []byte(f.Content)
		}
		resp, err := json.MarshalIndent(b.Response(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if n.Ordinal == 1 { // the wire shape once is enough
			got["bundle.json"] = append(resp, '\n')
		}
		assertGoldenDir(t, filepath.Join(goldenDir, n.Name), got)
	}
	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in"})
	if err != nil {
		t.Fatal(err)
	}
	assertGoldenDir(t, filepath.Join(goldenDir, "userdata"), map[string][]byte{"bootstrap-userdata.sh": []byte(ud)})
}

// assertGoldenDir compares want files under dir with got, byte for byte, and
// fails on missing or extra files. -update rewrites dir.
func assertGoldenDir(t *testing.T, dir string, got map[string][]byte) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for rel, content := range got {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		g, ok := got[rel]
		if !ok {
			t.Errorf("%s: golden file no longer rendered (run go test ./internal/bundle -update)", p)
			return nil
		}
		if !bytes.Equal(g, want) {
			t.Errorf("%s: rendered output differs from golden (run go test ./internal/bundle -update and review the diff)\n%s", p, firstDiff(string(want), string(g)))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading golden dir %s: %v", dir, err)
	}
	for rel := range got {
		if !seen[rel] {
			t.Errorf("%s/%s: rendered but has no golden file (run go test ./internal/bundle -update)", dir, rel)
		}
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}

// TestGoldenCNIs: what each CNI but the default (Cilium) changes in each
// node's bundle, as golden files under testdata/golden/<cni>/<node>: every
// file that differs from (or is absent in) the same node's Cilium bundle
// at its host path, and not-rendered.txt listing the Cilium bundle's
// files the other does not carry.
func TestGoldenCNIs(t *testing.T) {
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	c, nodes := testCluster()
	for _, cni := range clusterfacts.CNIs()[1:] {
		for _, n := range nodes {
			cilium, err := r.Render(fx.input(c, nodes, n.VMID))
			if err != nil {
				t.Fatal(err)
			}
			other := c
			other.CNI = cni
			b, err := r.Render(fx.input(other, nodes, n.VMID))
			if err != nil {
				t.Fatal(err)
			}
			assertGoldenDir(t, filepath.Join(goldenDir, string(cni), n.Name), changedFiles(cilium, b))
		}
	}
}

// changedFiles is what other changes in cilium, as golden files: every
// file of other that differs from (or is absent in) cilium at its host
// path, and not-rendered.txt listing cilium's files other does not carry.
func changedFiles(cilium, other *Bundle) map[string][]byte {
	got := map[string][]byte{}
	for _, f := range other.Files {
		if other, ok := cilium.File(f.Path); !ok || other.Content != f.Content {
			got[strings.TrimPrefix(f.Path, "/")] = []byte(f.Content)
		}
	}
	var dropped strings.Builder
	for _, f := range cilium.Files {
		if _, ok := other.File(f.Path); !ok {
			dropped.WriteString(f.Path + "\n")
		}
	}
	got["not-rendered.txt"] = []byte(dropped.String())
	return got
}
