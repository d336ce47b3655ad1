package harness

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuildMirrorLaysOutUpstreamReleases(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"kubelet", "kubectl", "etcd", "etcdctl", "etcdutl", "containerd", "containerd-shim-runc-v2", "ctr",
		"runc", "bridge", "host-local", "loopback", "portmap", "firewall"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The upgrade's release: its own kubelet and kubectl, in its folder.
	if err := os.MkdirAll(filepath.Join(bin, "v1.36.3"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"kubelet", "kubectl"} {
		if err := os.WriteFile(filepath.Join(bin, "v1.36.3", b), []byte("binary v1.36.3 "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	v := MirrorVersions{Kubernetes: "v1.35.4", Etcd: "v3.6.16", Containerd: "v2.2.9", Runc: "v1.3.6", CNIPlugins: "v1.9.1", Arch: "amd64",
		UpgradeTo: "v1.36.3"}
	pins, err := BuildMirror(bin, dir, v)
	if err != nil {
		t.Fatal(err)
	}
	// Each path is where the prereqs script looks, below its base.
	want := map[string]string{
		"kubelet-v1.35.4-linux-amd64":         "kube/v1.35.4/bin/linux/amd64/kubelet",
		"kubectl-v1.35.4-linux-amd64":         "kube/v1.35.4/bin/linux/amd64/kubectl",
		"kubelet-v1.36.3-linux-amd64":         "kube/v1.36.3/bin/linux/amd64/kubelet",
		"kubectl-v1.36.3-linux-amd64":         "kube/v1.36.3/bin/linux/amd64/kubectl",
		"etcd-v3.6.16-linux-amd64.tar.gz":     "etcd/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz",
		"containerd-2.2.9-linux-amd64.tar.gz": "containerd/v2.2.9/containerd-2.2.9-linux-amd64.tar.gz",
		"runc-v1.3.6-linux-amd64":             "runc/v1.3.6/runc.amd64",
		"cni-plugins-linux-amd64-v1.9.1.tgz":  "cni/v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz",
	}
	if len(pins) != len(want) {
		t.Errorf("pins %v, want %d", pins, len(want))
	}
	for pin, path := range want {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); pins[pin] != got {
			t.Errorf("%s: pinned %s, file digest %s", pin, pins[pin], got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, want["kubelet-v1.36.3-linux-amd64"])); string(b) != "binary v1.36.3 kubelet" {
		t.Errorf("the upgrade's kubelet is %q, want its release's build", b)
	}
	manifest, _ := os.ReadFile(filepath.Join(dir, "artifacts.sha256"))
	if !strings.Contains(string(manifest), pins["runc-v1.3.6-linux-amd64"]+"  runc-v1.3.6-linux-amd64\n") {
		t.Errorf("manifest lacks runc's pin:\n%s", manifest)
	}
	published := map[string]string{
		"kube/v1.35.4/bin/linux/amd64/kubelet.sha256": pins["kubelet-v1.35.4-linux-amd64"] + "\n",
		"etcd/v3.6.16/SHA256SUMS":                     pins["etcd-v3.6.16-linux-amd64.tar.gz"] + "  etcd-v3.6.16-linux-amd64.tar.gz\n",
		"runc/v1.3.6/runc.sha256sum":                  pins["runc-v1.3.6-linux-amd64"] + "  runc.amd64\n",
	}
	for p, w := range published {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != w {
			t.Errorf("%s = %q, want %q", p, b, w)
		}
	}
	if got := tarNames(t, filepath.Join(dir, want["etcd-v3.6.16-linux-amd64.tar.gz"])); !slices.Equal(got,
		[]string{"etcd-v3.6.16-linux-amd64/etcd", "etcd-v3.6.16-linux-amd64/etcdctl", "etcd-v3.6.16-linux-amd64/etcdutl"}) {
		t.Errorf("etcd archive holds %v", got)
	}
	if got := tarNames(t, filepath.Join(dir, want["containerd-2.2.9-linux-amd64.tar.gz"])); !slices.Equal(got,
		[]string{"bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr"}) {
		t.Errorf("containerd archive holds %v", got)
	}
	again, err := BuildMirror(bin, t.TempDir(), v)
	if err != nil || ManifestText(again) != ManifestText(pins) {
		t.Errorf("the same binaries made different archives: %v", err)
	}
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	return names
}
