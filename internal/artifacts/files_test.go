package artifacts

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// The table is upstream's release layout: each file at its URL, its digest
// published where upstream publishes it. The manifest's names are the
// release file names (dl.k8s.io's binaries and runc's, named without
// version or architecture, get both), one per file and architecture.
func TestArtifactFilesAreUpstreams(t *testing.T) {
	const (
		k8s  = "https://dl.k8s.io/v1.35.4/bin/linux/amd64/"
		gh   = "https://github.com/"
		etcd = gh + "etcd-io/etcd/releases/download/v3.6.10/"
		ctrd = gh + "containerd/containerd/releases/download/v2.2.9/"
		runc = gh + "opencontainers/runc/releases/download/v1.3.6/"
		cni  = gh + "containernetworking/plugins/releases/download/v1.9.1/"
	)
	want := []File{
		{"kubelet", "amd64", "kubelet-v1.35.4-linux-amd64", k8s + "kubelet", k8s + "kubelet.sha256", ""},
		{"kubectl", "amd64", "kubectl-v1.35.4-linux-amd64", k8s + "kubectl", k8s + "kubectl.sha256", ""},
		{"etcd", "amd64", "etcd-v3.6.10-linux-amd64.tar.gz", etcd + "etcd-v3.6.10-linux-amd64.tar.gz", etcd + "SHA256SUMS",
			"etcd-v3.6.10-linux-amd64.tar.gz"},
		{"containerd", "amd64", "containerd-2.2.9-linux-amd64.tar.gz", ctrd + "containerd-2.2.9-linux-amd64.tar.gz",
			ctrd + "containerd-2.2.9-linux-amd64.tar.gz.sha256sum", "containerd-2.2.9-linux-amd64.tar.gz"},
		{"runc", "amd64", "runc-v1.3.6-linux-amd64", runc + "runc.amd64", runc + "runc.sha256sum", "runc.amd64"},
		{"cni-plugins", "amd64", "cni-plugins-linux-amd64-v1.9.1.tgz", cni + "cni-plugins-linux-amd64-v1.9.1.tgz",
			cni + "cni-plugins-linux-amd64-v1.9.1.tgz.sha256", "cni-plugins-linux-amd64-v1.9.1.tgz"},
		{"helm", "amd64", "helm-v3.19.2-linux-amd64.tar.gz", "https://get.helm.sh/helm-v3.19.2-linux-amd64.tar.gz",
			"https://get.helm.sh/helm-v3.19.2-linux-amd64.tar.gz.sha256sum", "helm-v3.19.2-linux-amd64.tar.gz"},
	}
	a := Default()
	a.KubeDownloadBase += "/" // a base given with its slash makes the same URLs
	all := a.Files(DefaultKubernetesVersion, "")
	if !slices.Equal(all[:len(want)], want) {
		t.Fatalf("amd64 files\n%+v\nwant\n%+v", all[:len(want)], want)
	}
	names := map[string]bool{}
	for _, f := range all {
		if names[f.Name] || !fileRE.MatchString(f.Name) || !strings.Contains(f.Name, f.Arch) || !strings.Contains(f.URL, f.Arch) {
			t.Errorf("%+v: names must be unique, plain, and name their architecture, as must URLs", f)
		}
		names[f.Name] = true
	}
	if len(all) != len(Arches)*len(artifactFiles) {
		t.Errorf("%d files, want one per architecture and table row", len(all))
	}
}

// A cluster records the pins of its own versions only, on every
// architecture the manifest covers; Unpinned names what is left.
func TestRecordKeepsTheVersionsPins(t *testing.T) {
	a := Default()
	d := strings.Repeat("a", 64)
	a.SHA256 = map[string]string{
		"kubelet-v1.35.4-linux-amd64": d, "kubelet-v1.35.4-linux-arm64": d,
		"kubelet-v1.34.0-linux-amd64": d, "etcd-v3.6.9-linux-amd64.tar.gz": d, "notes.txt": d,
	}
	r := a.Record(DefaultKubernetesVersion, clusterfacts.CNICilium)
	if got := slices.Sorted(maps.Keys(r.SHA256)); !slices.Equal(got, []string{"kubelet-v1.35.4-linux-amd64", "kubelet-v1.35.4-linux-arm64"}) {
		t.Errorf("recorded pins %v", got)
	}
	if len(a.SHA256) != 5 {
		t.Error("Record changed the configured pins")
	}
	want := []string{"kubectl-v1.35.4-linux-amd64", "etcd-v3.6.10-linux-amd64.tar.gz", "containerd-2.2.9-linux-amd64.tar.gz",
		"runc-v1.3.6-linux-amd64", "cni-plugins-linux-amd64-v1.9.1.tgz", "helm-v3.19.2-linux-amd64.tar.gz"}
	if got := r.Unpinned(DefaultKubernetesVersion, clusterfacts.CNICilium, "amd64"); !slices.Equal(got, want) {
		t.Errorf("unpinned %v\nwant %v", got, want)
	}
}

func TestParseManifest(t *testing.T) {
	d, e := strings.Repeat("a", 64), strings.Repeat("B", 64)
	pins, err := ParseManifest("# a comment\n\n" + d + "  kubelet-v1.35.4-linux-amd64\n" +
		e + " *etcd-v3.6.10-linux-amd64.tar.gz\r\n" + d + "  kubelet-v1.35.4-linux-amd64\n")
	want := map[string]string{"kubelet-v1.35.4-linux-amd64": d, "etcd-v3.6.10-linux-amd64.tar.gz": strings.ToLower(e)}
	if err != nil || !maps.Equal(pins, want) {
		t.Fatalf("%v, %v", pins, err)
	}
	_, err = ParseManifest(d + "\nnot-hex  kubelet\n" + d + "  a/b\n" + d + "  kubelet\n" + e + "  kubelet\n" + d + "  x y\n")
	wantErr := strings.Join([]string{
		`line 1: want "<sha256>  <file name>"`,
		`line 2: "not-hex" is not a hex SHA-256`,
		`line 3: "a/b" is not an artifact file name`,
		`line 5: kubelet is pinned twice with different digests`,
		`line 6: want "<sha256>  <file name>"`,
	}, "\n")
	if err == nil || err.Error() != wantErr {
		t.Fatalf("got:\n%v\nwant:\n%s", err, wantErr)
	}
}

// The manifest k8sapi ships parses, and pins only files of the default
// versions: a pin for a version no longer shipped is stale.
func TestShippedManifest(t *testing.T) {
	pins, err := ShippedManifest()
	if err != nil {
		t.Fatal(err)
	}
	a := Default()
	files := map[string]bool{}
	for _, f := range a.Files(DefaultKubernetesVersion, "") {
		files[f.Name] = true
	}
	for name := range pins {
		if !files[name] {
			t.Errorf("the shipped manifest pins %s, which the default versions do not download", name)
		}
	}
	t.Logf("the shipped manifest pins %d of the default versions' %d files", len(pins), len(files))
}

// Only a Cilium cluster downloads helm (it installs Cilium), so founding
// a bridge or flannel cluster needs no helm pin.
func TestOnlyCiliumClustersNeedAHelmPin(t *testing.T) {
	a := Default()
	a.SHA256 = map[string]string{}
	helm := "helm-" + a.HelmVersion + "-linux-amd64.tar.gz"
	for _, cni := range clusterfacts.CNIs() {
		got := a.Unpinned(DefaultKubernetesVersion, cni, "amd64")
		if slices.Contains(got, helm) != (cni == clusterfacts.CNICilium) {
			t.Errorf("%s: unpinned %v", cni, got)
		}
	}
}
