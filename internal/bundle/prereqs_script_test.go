package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
)

// artifactMirror serves every file of the artifact table at its URL, each
// with the digest published beside it, and records every path asked for.
type artifactMirror struct {
	srv     *httptest.Server
	files   map[string][]byte // URL path -> content
	digests map[string]string // artifact file name (the manifest's) -> SHA-256
	mu      sync.Mutex
	asked   []string
	// With a barrier of n, each artifact request is held until n are in
	// flight at once (or a minute passes): a host that downloads one at a
	// time is seen as most in flight 1.
	barrier      int
	inFlight     int
	mostInFlight int
	allIn        chan struct{}
}

// newArtifactMirror serves the files of a's versions, a's bases pointed at
// it (mirrored), for every architecture. With wrongPublished every
// published digest is wrong: a mirror that lies.
func newArtifactMirror(t *testing.T, a artifacts.Set, k8s string, wrongPublished bool) (*artifactMirror, artifacts.Set) {
	m := &artifactMirror{files: map[string][]byte{}, digests: map[string]string{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	a = m.bases(a)
	for _, f := range a.Files(k8s, "") {
		content := artifactContent(t, f)
		sum := sha256.Sum256(content)
		m.files[urlPath(t, f.URL)], m.digests[f.Name] = content, hex.EncodeToString(sum[:])
		published := m.digests[f.Name]
		if wrongPublished {
			published = strings.Repeat("0", 64)
		}
		if f.SumsEntry != "" {
			published += "  " + f.SumsEntry
		}
		m.files[urlPath(t, f.SumsURL)] = append(m.files[urlPath(t, f.SumsURL)], published+"\n"...)
	}
	return m, a
}

// artifactContent is what the mirror serves for f: what the install
// functions unpack (upstream's archive layouts), else a fake binary.
func artifactContent(t *testing.T, f artifacts.File) []byte {
	switch f.Key {
	case "etcd":
		return tarGz(t, strings.TrimSuffix(f.Name, ".tar.gz")+"/", "etcd", "etcdctl")
	case "helm":
		return tarGz(t, "linux-"+f.Arch+"/", "helm")
	}
	return fakeBinary(f.Key)
}

func urlPath(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

func (m *artifactMirror) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.asked = append(m.asked, r.URL.Path)
	m.mu.Unlock()
	body, ok := m.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	defer m.hold()()
	_, _ = w.Write(body)
}

// holdAll makes every artifact request wait for n in flight.
func (m *artifactMirror) holdAll(n int) { m.barrier, m.allIn = n, make(chan struct{}) }

// hold counts a request in flight and, under a barrier, waits for the
// others; the function it returns counts it out.
func (m *artifactMirror) hold() func() {
	m.mu.Lock()
	m.inFlight++
	m.mostInFlight = max(m.mostInFlight, m.inFlight)
	if m.barrier > 0 && m.inFlight == m.barrier {
		close(m.allIn)
	}
	m.mu.Unlock()
	if m.barrier > 0 {
		select {
		case <-m.allIn:
		case <-time.After(time.Minute):
		}
	}
	return func() { m.mu.Lock(); m.inFlight--; m.mu.Unlock() }
}

func (m *artifactMirror) most() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mostInFlight
}

func (m *artifactMirror) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.asked...)
}

// bases points a's download bases at the mirror.
func (m *artifactMirror) bases(a artifacts.Set) artifacts.Set {
	a.KubeDownloadBase, a.EtcdDownloadBase, a.HelmDownloadBase = m.srv.URL+"/kube", m.srv.URL+"/etcd", m.srv.URL+"/helm"
	a.ContainerdDownloadBase, a.RuncDownloadBase, a.CNIPluginsDownloadBase = m.srv.URL+"/containerd", m.srv.URL+"/runc", m.srv.URL+"/cni"
	return a
}

func fakeBinary(name string) []byte { return []byte("#!/bin/sh\necho " + name + "\n") }

// tarGz is an archive of fake binaries named prefix+name.
func tarGz(t *testing.T, prefix string, names ...string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		body := fakeBinary(n)
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runPrereqs renders node 101's bundle from a, writes its cluster.env,
// manifest, progress library and prereqs script into a folder, sources the
// script (which then only defines its functions), points its paths into
// the folder, reads cluster.env (load_facts) and runs calls. It returns
// the folder and the output.
func runPrereqs(t *testing.T, a artifacts.Set, calls string) (string, string, error) {
	t.Helper()
	requireTools(t, "bash", "curl", "sha256sum", "tar", "install", "awk")
	c, nodes := testCluster()
	in := loadFixtures(t).input(c, nodes, 101)
	in.Artifacts = a
	b, err := newTestRenderer(t).Render(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, path := range map[string]string{
		"cluster.env": configDir + "/cluster.env", "artifacts.sha256": configDir + "/artifacts.sha256",
		"exk8s-progress.sh": binDir + "/exk8s-progress.sh", "prereqs.sh": binDir + "/exk8s-install-prereqs.sh",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(mustFile(t, b, path)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	driver := `set -euo pipefail
. "$1/exk8s-progress.sh"
. "$1/prereqs.sh"
CLUSTER_ENV="$1/cluster.env" ARTIFACT_MANIFEST="$1/artifacts.sha256" BIN_DIR="$1/bin" DOWNLOADS="$1/downloads"
mkdir -p "$BIN_DIR" "$DOWNLOADS"
load_facts
` + calls
	cmd := exec.Command("bash", "-c", driver, "driver", dir)
	cmd.Env = append(os.Environ(), "EXK8S_ROOT="+filepath.Join(dir, "root"))
	out, err := cmd.CombinedOutput()
	return dir, string(out), err
}

// pinned is a's manifest: the digest the mirror serves for each of names.
func (m *artifactMirror) pinned(a artifacts.Set, names ...string) artifacts.Set {
	a.SHA256 = map[string]string{}
	for _, n := range names {
		a.SHA256[n] = m.digests[n]
	}
	return a
}

// hostArch is this machine's architecture as the prereqs script names it.
func hostArch(t *testing.T) string {
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	switch strings.TrimSpace(string(out)) {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	t.Fatalf("the prereqs script supports no %s", out)
	return ""
}

// Every download pinned: the kubelet, kubectl, etcd and helm install from
// the table's URLs, checked by the names the table gives, and the pin wins
// over the published digest (here every published one is wrong, and none
// is even fetched).
func TestPrereqsInstallPinnedArtifacts(t *testing.T) {
	m, a := newArtifactMirror(t, artifacts.Default(), "v1.35.4", true)
	a = m.pinned(a, slices.Collect(maps.Keys(m.digests))...)
	keys := []string{"kubelet", "kubectl", "etcd", "helm"}
	m.holdAll(len(keys))
	dir, out, err := runPrereqs(t, a, downloadAll(keys...)+"install_kube_binaries\ninstall_etcd\ninstall_helm\n")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if most := m.most(); most != len(keys) {
		t.Errorf("at most %d downloads in flight at once, want all %d", most, len(keys))
	}
	for _, bin := range []string{"kubelet", "kubectl", "etcd", "etcdctl", "helm"} {
		got, err := exec.Command(filepath.Join(dir, "bin", bin)).Output()
		if err != nil || strings.TrimSpace(string(got)) != bin {
			t.Errorf("%s installed: %q, %v\n%s", bin, got, err, out)
		}
	}
	for _, p := range m.requests() {
		if strings.Contains(p, "sha256") || strings.HasSuffix(p, "SHA256SUMS") {
			t.Errorf("fetched the published digest %s though the artifact is pinned", p)
		}
	}
}

// What happens to one download (helm) by its pin and the fallback.
func TestPrereqsVerifyEachDownload(t *testing.T) {
	m, a := newArtifactMirror(t, artifacts.Default(), "v1.35.4", false)
	helm := "helm-" + a.HelmVersion + "-linux-" + hostArch(t) + ".tar.gz"
	for _, tc := range []struct {
		name      string
		artifacts artifacts.Set
		installed bool
		says      []string
		fetched   bool // the archive was downloaded
	}{
		{"pinned", m.pinned(a, helm), true, []string{"verified " + helm}, true},
		{"pinned, but the mirror serves something else", mismatched(m.pinned(a, helm), helm), false,
			[]string{"SHA-256 MISMATCH for " + helm, "bootstrap stopped"}, true},
		{"not pinned, no fallback", m.pinned(a), false,
			[]string{helm + " is not pinned", "refusing to download it", "ARTIFACT_MANIFEST_FILE", "ARTIFACT_DIGEST_FALLBACK=true"}, false},
		{"not pinned, the fallback allowed", withFallback(m.pinned(a)), true,
			[]string{"WARNING: " + helm + " is not pinned", "trusting the digest published", "verified " + helm}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(m.requests())
			dir, out, err := runPrereqs(t, tc.artifacts, downloadAll("helm")+"install_helm\n")
			if (err == nil) != tc.installed {
				t.Fatalf("install_helm: %v, want success %v\n%s", err, tc.installed, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "bin", "helm")); (err == nil) != tc.installed {
				t.Errorf("helm installed: %v, want %v", err == nil, tc.installed)
			}
			if !tc.installed && !strings.Contains(out, "download failed: helm") {
				t.Errorf("output does not name the failed download:\n%s", out)
			}
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			fetched := false
			for _, p := range m.requests()[before:] {
				fetched = fetched || strings.HasSuffix(p, helm)
			}
			if fetched != tc.fetched {
				t.Errorf("downloaded %s: %v, want %v", helm, fetched, tc.fetched)
			}
		})
	}
}

// downloadAll is the script's call that downloads keys into DOWNLOADS.
func downloadAll(keys ...string) string {
	return "download_all \"$DOWNLOADS\" " + strings.Join(keys, " ") + "\n"
}

func mismatched(a artifacts.Set, name string) artifacts.Set {
	a.SHA256[name] = strings.Repeat("e", 64)
	return a
}

func withFallback(a artifacts.Set) artifacts.Set {
	a.DigestFallback = true
	return a
}

// containerd reaches IMAGE_REGISTRY over https, or plain HTTP when the
// cluster says so (a registry on a private network).
func TestPrereqsRegistryHostConfig(t *testing.T) {
	for _, plain := range []bool{false, true} {
		a := artifacts.Default()
		a.ImageRegistry, a.ImageRegistryPlainHTTP = "mirror.internal:5000/k8s", plain
		dir, out, err := runPrereqs(t, a, `write_registry_hosts "$1/certs.d"`+"\n")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "certs.d", "mirror.internal:5000", "hosts.toml"))
		scheme := map[bool]string{false: "https", true: "http"}[plain]
		want := "server = \"" + scheme + "://mirror.internal:5000\"\n\n[host.\"" + scheme + "://mirror.internal:5000\"]\n" +
			"  capabilities = [\"pull\", \"resolve\"]\n"
		if err != nil || string(got) != want {
			t.Errorf("plain HTTP %v: hosts.toml %q, %v; want %q", plain, got, err, want)
		}
	}
}

// scripts/pin-artifacts.sh writes the digest published for every file of
// the plan into the manifest, keeping its comments; asked to download, it
// refuses a published digest the file does not have, and writes nothing.
func TestPinArtifactsScript(t *testing.T) {
	requireTools(t, "bash", "curl", "sha256sum", "awk", "sort")
	m, a := newArtifactMirror(t, artifacts.Default(), artifacts.DefaultKubernetesVersion, false)
	dir := t.TempDir()
	plan, manifest := filepath.Join(dir, "plan"), filepath.Join(dir, "pins.sha256")
	header := "# reviewed like code\n"
	for _, f := range []struct{ path, content string }{{plan, artifacts.PinPlan(a, artifacts.DefaultKubernetesVersion)}, {manifest, header + "# stale\n"}} {
		if err := os.WriteFile(f.path, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env ...string) (string, error) {
		cmd := exec.Command("bash", "../../scripts/pin-artifacts.sh", plan)
		cmd.Env = append(os.Environ(), append(env, "PIN_MANIFEST="+manifest)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("DOWNLOAD=1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	written, _ := os.ReadFile(manifest)
	pins, err := artifacts.ParseManifest(string(written))
	if err != nil || !maps.Equal(pins, m.digests) || len(pins) != len(a.Files(artifacts.DefaultKubernetesVersion, "")) ||
		!strings.HasPrefix(string(written), header+"# stale\n") {
		t.Fatalf("manifest (%v):\n%s", err, written)
	}

	liar, _ := newArtifactMirror(t, artifacts.Default(), artifacts.DefaultKubernetesVersion, true)
	liarPlan := strings.ReplaceAll(artifacts.PinPlan(a, artifacts.DefaultKubernetesVersion), m.srv.URL, liar.srv.URL)
	if err := os.WriteFile(plan, []byte(liarPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run("DOWNLOAD=1")
	if again, _ := os.ReadFile(manifest); err == nil || !strings.Contains(out, "but "+strings.Repeat("0", 64)+" is published for it") ||
		string(again) != string(written) {
		t.Fatalf("a lying mirror: %v\n%s", err, out)
	}
}
