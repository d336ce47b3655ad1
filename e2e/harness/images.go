package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image is one OCI image the proof's registry serves: binaries from the
// build folder at fixed paths, over an optional base root filesystem.
type Image struct {
	Repo, Tag  string            // e.g. kube-apiserver, v1.35.4
	Binaries   map[string]string // path in the image -> binary name in the build folder
	Setuid     []string          // paths of Binaries installed setuid root
	Files      map[string][]byte // path in the image -> content made by the harness (0644)
	Links      map[string]string // path in the image -> symlink target
	BaseRootfs string            // a root filesystem folder under the binaries (kube-proxy needs iptables)
	Entrypoint []string
	Cmd        []string
	User       string
}

// ProofImages is the table of images the static pods and the addons name,
// all built from the build folder: the founding release's (below) and
// flannel's. kube-proxy runs over the node image's root filesystem, which
// has the iptables it programs, and so does flanneld (the flannel CNI's
// agent, its masquerade rules).
func ProofImages(kubeVersion, corednsVersion, pauseVersion, flannelVersion, nodeRootfs string) []Image {
	return append(ReleaseImages(ImageRelease{Kubernetes: kubeVersion, CoreDNS: corednsVersion, Pause: pauseVersion}, nodeRootfs),
		Image{Repo: "flannel-io/flannel", Tag: flannelVersion, Binaries: map[string]string{"/opt/bin/flanneld": "flanneld"},
			BaseRootfs: nodeRootfs, Entrypoint: []string{"/opt/bin/flanneld"}})
}

// ImageRelease is one release's image versions and the build folder's
// subfolder its Kubernetes and CoreDNS binaries are in ("" for the
// founding release's, the folder itself).
type ImageRelease struct {
	Kubernetes, CoreDNS, Pause string
	KubeDir, CoreDNSDir        string
}

// ReleaseImages are the images a release's nodes name: the control plane
// and kube-proxy at its Kubernetes version, CoreDNS and pause at theirs
// (pause is the project's own program at every tag).
func ReleaseImages(r ImageRelease, nodeRootfs string) []Image {
	kube := func(name string) Image {
		return Image{Repo: name, Tag: r.Kubernetes, Binaries: map[string]string{"/usr/local/bin/" + name: filepath.Join(r.KubeDir, name)},
			Entrypoint: []string{"/usr/local/bin/" + name}}
	}
	proxy := kube("kube-proxy")
	proxy.BaseRootfs = nodeRootfs
	return []Image{
		kube("kube-apiserver"), kube("kube-controller-manager"), kube("kube-scheduler"), proxy,
		{Repo: "coredns/coredns", Tag: r.CoreDNS, Binaries: map[string]string{"/coredns": filepath.Join(r.CoreDNSDir, "coredns")}, Entrypoint: []string{"/coredns"}},
		{Repo: "pause", Tag: r.Pause, Binaries: map[string]string{"/pause": "pause"}, Entrypoint: []string{"/pause"}},
	}
}

// imagePath is the PATH of every image: the static pod manifests and the
// addons name their commands (kube-apiserver, kube-proxy) without a path.
const imagePath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"

// BuildImage assembles img for linux/arch from binDir.
func BuildImage(img Image, binDir, arch string) (v1.Image, error) {
	return buildImage(img, binDir, arch, baseLayers{})
}

// baseLayers keeps one layer per base root filesystem: a layer's digest is
// computed once, by compressing the whole folder, and the images of one
// push share their bases (the registry then stores each base once).
type baseLayers map[string]v1.Layer

func (b baseLayers) get(dir string) (v1.Layer, error) {
	if l, ok := b[dir]; ok {
		return l, nil
	}
	l, err := dirLayer(dir)
	if err != nil {
		return nil, err
	}
	if _, err := l.Digest(); err != nil {
		return nil, err
	}
	b[dir] = l
	return l, nil
}

func buildImage(img Image, binDir, arch string, bases baseLayers) (v1.Image, error) {
	var layers []v1.Layer
	if img.BaseRootfs != "" {
		l, err := bases.get(img.BaseRootfs)
		if err != nil {
			return nil, fmt.Errorf("image %s: base layer: %w", img.Repo, err)
		}
		layers = append(layers, l)
	}
	l, err := contentLayer(img, binDir)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.Repo, err)
	}
	out, err := mutate.AppendLayers(empty.Image, append(layers, l)...)
	if err != nil {
		return nil, err
	}
	cfg, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.User = img.Entrypoint, img.Cmd, img.User
	cfg.Config.Env = []string{imagePath}
	return mutate.ConfigFile(out, cfg)
}

// PushImages builds every image and pushes it to the registry at host
// (plain HTTP) through transport, which may dial inside a namespace.
func PushImages(ctx context.Context, images []Image, binDir, arch, host string, transport http.RoundTripper) error {
	bases := baseLayers{}
	for _, img := range images {
		built, err := buildImage(img, binDir, arch, bases)
		if err != nil {
			return err
		}
		ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", host, img.Repo, img.Tag), name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, built, remote.WithContext(ctx), remote.WithTransport(transport)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	return nil
}

// contentLayer is the layer an image adds over its base: its binaries
// (0755, or setuid root), the files the harness made and its symlinks.
func contentLayer(img Image, binDir string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dest := range slices.Sorted(maps.Keys(img.Binaries)) {
		mode := int64(0o755)
		if slices.Contains(img.Setuid, dest) {
			mode = 0o4755
		}
		if err := addFileMode(tw, filepath.Join(binDir, img.Binaries[dest]), dest[1:], mode); err != nil {
			return nil, err
		}
	}
	if err := addMade(tw, img.Files, img.Links); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// addMade writes files made in memory and symlinks, in path order.
func addMade(tw *tar.Writer, files map[string][]byte, links map[string]string) error {
	for _, dest := range slices.Sorted(maps.Keys(files)) {
		h := &tar.Header{Name: dest[1:], Mode: 0o644, Size: int64(len(files[dest])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(files[dest]); err != nil {
			return err
		}
	}
	for _, dest := range slices.Sorted(maps.Keys(links)) {
		h := &tar.Header{Name: dest[1:], Linkname: links[dest], Mode: 0o777, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	return nil
}

// dirLayer is a layer holding a whole folder (symlinks kept, special files
// skipped), streamed from disk on each read.
func dirLayer(dir string) (v1.Layer, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarDir(dir, pw)) }()
		return pr, nil
	})
}

func tarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !fi.Mode().IsRegular() && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			return nil // devices, sockets, fifos: not in an image
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = rel
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
