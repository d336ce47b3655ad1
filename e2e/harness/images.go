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
	BaseRootfs string            // a root filesystem folder under the binaries (kube-proxy needs iptables)
	Entrypoint []string
}

// ProofImages is the table of images the static pods and the addons name,
// all built from the build folder: the control plane and kube-proxy at the
// Kubernetes version, CoreDNS and pause at theirs. kube-proxy runs over the
// node image's root filesystem, which has the iptables it programs.
func ProofImages(kubeVersion, corednsVersion, pauseVersion, nodeRootfs string) []Image {
	kube := func(name string) Image {
		return Image{Repo: name, Tag: kubeVersion, Binaries: map[string]string{"/usr/local/bin/" + name: name},
			Entrypoint: []string{"/usr/local/bin/" + name}}
	}
	proxy := kube("kube-proxy")
	proxy.BaseRootfs = nodeRootfs
	return []Image{
		kube("kube-apiserver"), kube("kube-controller-manager"), kube("kube-scheduler"), proxy,
		{Repo: "coredns/coredns", Tag: corednsVersion, Binaries: map[string]string{"/coredns": "coredns"}, Entrypoint: []string{"/coredns"}},
		{Repo: "pause", Tag: pauseVersion, Binaries: map[string]string{"/pause": "pause"}, Entrypoint: []string{"/pause"}},
	}
}

// imagePath is the PATH of every image: the static pod manifests and the
// addons name their commands (kube-apiserver, kube-proxy) without a path.
const imagePath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"

// BuildImage assembles img for linux/arch from binDir.
func BuildImage(img Image, binDir, arch string) (v1.Image, error) {
	var layers []v1.Layer
	if img.BaseRootfs != "" {
		l, err := dirLayer(img.BaseRootfs)
		if err != nil {
			return nil, fmt.Errorf("image %s: base layer: %w", img.Repo, err)
		}
		layers = append(layers, l)
	}
	l, err := binariesLayer(img.Binaries, binDir)
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
	cfg.Config.Entrypoint = img.Entrypoint
	cfg.Config.Env = []string{imagePath}
	return mutate.ConfigFile(out, cfg)
}

// PushImages builds every image and pushes it to the registry at host
// (plain HTTP) through transport, which may dial inside a namespace.
func PushImages(ctx context.Context, images []Image, binDir, arch, host string, transport http.RoundTripper) error {
	for _, img := range images {
		built, err := BuildImage(img, binDir, arch)
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

// binariesLayer is a layer of binaries, each at its path, mode 0755.
func binariesLayer(binaries map[string]string, binDir string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dest := range slices.Sorted(maps.Keys(binaries)) {
		if err := addFile(tw, filepath.Join(binDir, binaries[dest]), dest[1:]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
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
