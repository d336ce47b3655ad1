package harness

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"maps"
)

// TestImageRoots are the root filesystems the conformance suite's test
// images are made of (build-node-image.sh test-images).
type TestImageRoots struct {
	Userland string // Debian: curl, nc, dig, ip, iperf, nginx, getent, the image users
	Busybox  string // the static busybox's applets under /bin, /bin/sh a static bash
}

// e2eRepo is where the suite looks for its own images under the
// promoterE2eRegistry prefix (TestRepoList).
const e2eRepo = "e2e-test-images/"

// TestImages is the table of every image the [Conformance] tests of the
// suite name (k8s.io/kubernetes test/utils/image at the cluster's
// version), each made here. pause is not in it: the proof's own pause
// image already has the name and tag the suite asks for. etcdTag is the
// tag the suite names for the aggregator test's etcd; the project's etcd
// build answers to it.
func TestImages(roots TestImageRoots, etcdTag string) ([]Image, error) {
	agnhostFiles, err := agnhostFiles()
	if err != nil {
		return nil, err
	}
	agnhost := func(repo, tag string) Image {
		return Image{Repo: e2eRepo + repo, Tag: tag, BaseRootfs: roots.Userland,
			Binaries: map[string]string{"/agnhost": "agnhost", "/coredns": "coredns"},
			Files:    agnhostFiles, Links: map[string]string{"/agnhost-2": "agnhost"},
			Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}}
	}
	demo := func(repo string) Image {
		img := agnhost(repo, "1.7")
		img.Files, img.Cmd = updateDemoPage(repo, agnhostFiles), []string{"test-webserver"}
		return img
	}
	nginx := func(tag string) Image {
		return Image{Repo: e2eRepo + "nginx", Tag: tag, BaseRootfs: roots.Userland,
			Files:      map[string][]byte{"/etc/nginx/sites-enabled/default": []byte(nginxSite)},
			Entrypoint: []string{"nginx", "-g", "daemon off;"}}
	}
	return []Image{
		agnhost("agnhost", "2.59"), agnhost("agnhost", "2.55"),
		demo("nautilus"), demo("kitten"),
		nginx("1.14-4"), nginx("1.15-4"),
		{Repo: e2eRepo + "busybox", Tag: "1.37.0-1", BaseRootfs: roots.Busybox, Cmd: []string{"sh"}},
		{Repo: e2eRepo + "jessie-dnsutils", Tag: "1.7", BaseRootfs: roots.Userland, Cmd: []string{"sh"}},
		{Repo: e2eRepo + "nonroot", Tag: "1.4", BaseRootfs: roots.Busybox, Cmd: []string{"sh"}, User: "1234"},
		{Repo: e2eRepo + "nonewprivs", Tag: "1.3", BaseRootfs: roots.Busybox,
			Binaries: map[string]string{"/usr/local/bin/nnp": "nonewprivs"}, Setuid: []string{"/usr/local/bin/nnp"},
			Cmd: []string{"nnp"}},
		{Repo: e2eRepo + "sample-apiserver", Tag: "1.29.2",
			Binaries: map[string]string{"/sample-apiserver": "sample-apiserver"}, Entrypoint: []string{"/sample-apiserver"}},
		{Repo: "etcd", Tag: etcdTag, Binaries: map[string]string{"/usr/local/bin/etcd": "etcd", "/usr/local/bin/etcdctl": "etcdctl"},
			Entrypoint: []string{"/usr/local/bin/etcd"}},
	}, nil
}

// nginxSite replaces Debian's default site: the page on port 80 over IPv4
// only, as the suite's nginx image serves it (Debian's also listens on
// [::]:80, which fails in a pod without IPv6).
const nginxSite = `server {
	listen 80 default_server;
	root /usr/share/nginx/html;
	index index.html index.nginx-debian.html;
}
`

// TestRepoList is the file KUBE_TEST_REPO_LIST names: the suite's
// registry prefixes moved to the proof's registry at host. Only the
// prefixes change; every image keeps its name and tag.
func TestRepoList(host string) []byte {
	return fmt.Appendf(nil, "promoterE2eRegistry: %s/%s\ngcRegistry: %s\ngcEtcdRegistry: %s\n",
		host, e2eRepo[:len(e2eRepo)-1], host, host)
}

// agnhostFiles are the files agnhost's porter serves TLS with, made here:
// a certificate for localhost from a throwaway CA, and its key.
func agnhostFiles() (map[string][]byte, error) {
	ca, err := NewTestCA("agnhost test CA")
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.IssuePEM("localhost", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"/localhost.crt": cert, "/localhost.key": key}, nil
}

// updateDemoPage is the page of kubectl's Update Demo images: data.json
// names the picture (the suite reads it through the pod proxy), and the
// picture is a small one drawn here, a colour for each image.
func updateDemoPage(name string, base map[string][]byte) map[string][]byte {
	files := maps.Clone(base)
	files["/data.json"] = fmt.Appendf(nil, "{\n  \"image\": \"%s.jpg\"\n}\n", name)
	files["/"+name+".jpg"] = picture(name)
	return files
}

// picture draws a 32x32 square of one colour chosen by name.
func picture(name string) []byte {
	c := color.RGBA{R: 40, G: 90, B: 160, A: 255}
	if name == "kitten" {
		c = color.RGBA{R: 220, G: 140, B: 40, A: 255}
	}
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, img, nil) // writing to memory cannot fail
	return buf.Bytes()
}
