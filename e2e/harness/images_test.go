package harness

import (
	"archive/tar"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushImagesServesEveryImageTheClusterNames pushes the proof's image
// table to a registry and reads each back: the tag resolves, the binary
// sits at its path, the entrypoint and PATH are set, the base root
// filesystem is under kube-proxy and flanneld.
func TestPushImagesServesEveryImageTheClusterNames(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns", "pause", "flanneld"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "usr/sbin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "usr/sbin/xtables-nft-multi"), []byte("iptables"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("xtables-nft-multi", filepath.Join(rootfs, "usr/sbin/iptables")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	images := ProofImages("v1.35.4", "v1.13.1", "3.10.1", "v0.28.10", rootfs)
	if err := PushImages(context.Background(), images, bin, "amd64", host, http.DefaultTransport); err != nil {
		t.Fatal(err)
	}
	for _, img := range images {
		ref, err := name.NewTag(host+"/"+img.Repo+":"+img.Tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		cfg, err := got.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != "amd64" || strings.Join(cfg.Config.Entrypoint, " ") != strings.Join(img.Entrypoint, " ") ||
			len(cfg.Config.Env) != 1 || !strings.HasPrefix(cfg.Config.Env[0], "PATH=/usr/local/bin:") {
			t.Errorf("%s: config %+v", ref, cfg.Config)
		}
		files := flatten(t, got)
		for dest, b := range img.Binaries {
			if files[dest[1:]] != "binary "+b {
				t.Errorf("%s: %s holds %q", ref, dest, files[dest[1:]])
			}
		}
		if img.Repo == "kube-proxy" && files["usr/sbin/xtables-nft-multi"] != "iptables" {
			t.Errorf("kube-proxy lacks the base root filesystem: %v", files)
		}
	}
}

// flatten returns the image's regular files and their contents.
func flatten(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[h.Name] = string(b)
		}
	}
}
