package harness

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MirrorVersions names what the mirror serves: the versions the cluster is
// founded with, and the nodes' architecture.
type MirrorVersions struct {
	Kubernetes, Etcd, Containerd, Runc, CNIPlugins string
	Arch                                           string // amd64, arm64
	// UpgradeTo is the release an upgrade moves the cluster to ("" for
	// none): its kubelet and kubectl are served too, from the build
	// folder's subfolder named by it.
	UpgradeTo string
}

// kubeReleases are the Kubernetes versions whose downloads the mirror
// serves, each with the build folder's subfolder its binaries are in.
func (v MirrorVersions) kubeReleases() [][2]string {
	out := [][2]string{{v.Kubernetes, ""}}
	if v.UpgradeTo != "" {
		out = append(out, [2]string{v.UpgradeTo, v.UpgradeTo})
	}
	return out
}

// mirrorArtifact is one download the prereqs script makes: where it sits
// under the mirror (upstream's release layout below a base of its own),
// the name the cluster's artifact manifest pins it by, how its published
// digest file is named and written, and how it is made from built binaries.
type mirrorArtifact struct {
	path      string // below the mirror root
	pin       string // the manifest's file name for it
	sumsPath  string // the digest published beside it
	sumsBare  bool   // bare digest (dl.k8s.io) instead of "<digest>  <file>"
	make      func(binDir string, w io.Writer) error
	sumsEntry string // the file name in a "<digest>  <file>" line
}

// mirrorArtifacts is the table of everything the mirror serves.
func mirrorArtifacts(v MirrorVersions) []mirrorArtifact {
	var out []mirrorArtifact
	for _, r := range v.kubeReleases() {
		for _, b := range []string{"kubelet", "kubectl"} {
			p := fmt.Sprintf("kube/%s/bin/linux/%s/%s", r[0], v.Arch, b)
			out = append(out, mirrorArtifact{path: p, pin: fmt.Sprintf("%s-%s-linux-%s", b, r[0], v.Arch),
				sumsPath: p + ".sha256", sumsBare: true, make: copyBinary(filepath.Join(r[1], b))})
		}
	}
	etcdFile := fmt.Sprintf("etcd-%s-linux-%s.tar.gz", v.Etcd, v.Arch)
	containerdFile := fmt.Sprintf("containerd-%s-linux-%s.tar.gz", strings.TrimPrefix(v.Containerd, "v"), v.Arch)
	runcFile := "runc." + v.Arch
	cniFile := fmt.Sprintf("cni-plugins-linux-%s-%s.tgz", v.Arch, v.CNIPlugins)
	return append(out,
		mirrorArtifact{path: "etcd/" + v.Etcd + "/" + etcdFile, pin: etcdFile, sumsPath: "etcd/" + v.Etcd + "/SHA256SUMS",
			sumsEntry: etcdFile, make: tarGz(strings.TrimSuffix(etcdFile, ".tar.gz")+"/", "etcd", "etcdctl", "etcdutl")},
		mirrorArtifact{path: "containerd/" + v.Containerd + "/" + containerdFile, pin: containerdFile,
			sumsPath: "containerd/" + v.Containerd + "/" + containerdFile + ".sha256sum", sumsEntry: containerdFile,
			make: tarGz("bin/", "containerd", "containerd-shim-runc-v2", "ctr")},
		mirrorArtifact{path: "runc/" + v.Runc + "/" + runcFile, pin: fmt.Sprintf("runc-%s-linux-%s", v.Runc, v.Arch),
			sumsPath: "runc/" + v.Runc + "/runc.sha256sum", sumsEntry: runcFile, make: copyBinary("runc")},
		mirrorArtifact{path: "cni/" + v.CNIPlugins + "/" + cniFile, pin: cniFile,
			sumsPath: "cni/" + v.CNIPlugins + "/" + cniFile + ".sha256", sumsEntry: cniFile,
			make: tarGz("./", "bridge", "host-local", "loopback", "portmap", "firewall")},
	)
}

// MirrorBases are the download bases a cluster served by the mirror at
// root URL is founded with.
func MirrorBases(root string) map[string]string {
	root = strings.TrimSuffix(root, "/")
	return map[string]string{
		"KUBE_DOWNLOAD_BASE":        root + "/kube",
		"ETCD_DOWNLOAD_BASE":        root + "/etcd",
		"CONTAINERD_DOWNLOAD_BASE":  root + "/containerd",
		"RUNC_DOWNLOAD_BASE":        root + "/runc",
		"CNI_PLUGINS_DOWNLOAD_BASE": root + "/cni",
	}
}

// BuildMirror lays out under dir every artifact the prereqs script
// downloads, made from the binaries in binDir, each with the digest file
// upstream publishes beside it, and writes dir/artifacts.sha256: the
// manifest pinning each by the name the cluster's manifest uses. It
// returns those pins.
func BuildMirror(binDir, dir string, v MirrorVersions) (map[string]string, error) {
	pins := map[string]string{}
	sums := map[string][]string{} // published digest file -> lines
	for _, a := range mirrorArtifacts(v) {
		digest, err := writeArtifact(binDir, filepath.Join(dir, a.path), a.make)
		if err != nil {
			return nil, fmt.Errorf("mirror: making %s: %w", a.path, err)
		}
		pins[a.pin] = digest
		line := digest
		if !a.sumsBare {
			line = digest + "  " + a.sumsEntry
		}
		sums[a.sumsPath] = append(sums[a.sumsPath], line)
	}
	for p, lines := range sums {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return pins, os.WriteFile(filepath.Join(dir, "artifacts.sha256"), []byte(ManifestText(pins)), 0o644)
}

// ManifestText renders pins as the artifact manifest: "<sha256>  <file>".
func ManifestText(pins map[string]string) string {
	files := make([]string, 0, len(pins))
	for f := range pins {
		files = append(files, f)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s  %s\n", pins[f], f)
	}
	return b.String()
}

func writeArtifact(binDir, path string, make func(string, io.Writer) error) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	err = make(binDir, io.MultiWriter(f, h))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

func copyBinary(name string) func(string, io.Writer) error {
	return func(binDir string, w io.Writer) error {
		f, err := os.Open(filepath.Join(binDir, name))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
}

// tarGz packs binaries as prefix+name, mode 0755, with fixed times so the
// same binaries always make the same archive (and digest).
func tarGz(prefix string, names ...string) func(string, io.Writer) error {
	return func(binDir string, w io.Writer) error {
		zw := gzip.NewWriter(w)
		tw := tar.NewWriter(zw)
		for _, n := range names {
			if err := addFile(tw, filepath.Join(binDir, n), prefix+n); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return zw.Close()
	}
}

func addFile(tw *tar.Writer, src, name string) error { return addFileMode(tw, src, name, 0o755) }

// addFileMode writes src into tw as name with mode.
func addFileMode(tw *tar.Writer, src, name string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: st.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// ServeMirror serves dir over HTTP on l until l is closed.
func ServeMirror(l net.Listener, dir string) {
	go func() { _ = http.Serve(l, http.FileServer(http.Dir(dir))) }()
}
