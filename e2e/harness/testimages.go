package harness

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"maps"
	"path/filepath"
	"slices"
	"strings"
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

// SuiteImages are the test images one release's suite names, keyed by the
// image IDs of its test/utils/image/manifest.go, each as name:tag (what
// ReadImageManifest reads from that release).
type SuiteImages map[string]string

// TestImages are the images the [Conformance] tests of one release's
// suite name, each made here (testImageMakers). pause is not among them:
// the proof's own pause image already has the name and tag each release
// asks for. binSubdir is where build-components.sh put that release's
// agnhost, nonewprivs and sample-apiserver in the build folder ("" for
// the founding release's).
func TestImages(roots TestImageRoots, names SuiteImages, binSubdir string) ([]Image, error) {
	files, err := agnhostFiles()
	if err != nil {
		return nil, err
	}
	k := testImageKit{roots: roots, agnhostFiles: files, binSubdir: binSubdir}
	var images []Image
	for _, id := range slices.Sorted(maps.Keys(names)) {
		build, known := testImageMakers[id]
		name, tag, named := strings.Cut(names[id], ":")
		if !known || !named {
			return nil, fmt.Errorf("the suite's image %s (%q): no way to make it here", id, names[id])
		}
		images = append(images, build(k, name, tag))
	}
	return images, nil
}

// testImageMakers makes each image the suite may name, by its manifest ID.
// A release that renames an image keeps its maker (jessie-dnsutils became
// glibc-dns-testing in v1.36, the same Debian DNS tools).
var testImageMakers = map[string]func(k testImageKit, name, tag string) Image{
	"Agnhost": testImageKit.agnhost, "AgnhostPrev": testImageKit.agnhost,
	"Nautilus": testImageKit.updateDemo, "Kitten": testImageKit.updateDemo,
	"Nginx": testImageKit.nginx, "NginxNew": testImageKit.nginx,
	"BusyBox":        testImageKit.busybox,
	"JessieDnsutils": testImageKit.dnsutils, "GlibcDnsTesting": testImageKit.dnsutils,
	"NonRoot":    testImageKit.nonroot,
	"Nonewprivs": testImageKit.nonewprivs,
	"APIServer":  testImageKit.sampleAPIServer,
	"Etcd":       testImageKit.etcd,
}

// testImageKit is what the test images are made of: the root filesystems,
// agnhost's TLS files and the folder of the release's own programs.
type testImageKit struct {
	roots        TestImageRoots
	agnhostFiles map[string][]byte
	binSubdir    string
}

// bin is a release's own program in the build folder.
func (k testImageKit) bin(name string) string { return filepath.Join(k.binSubdir, name) }

// agnhost is upstream's layout: /agnhost with an /agnhost-2 link (a test
// checks the printed argv), the localhost certificate, ENTRYPOINT
// /agnhost, CMD pause.
func (k testImageKit) agnhost(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Userland,
		Binaries: map[string]string{"/agnhost": k.bin("agnhost"), "/coredns": "coredns"},
		Files:    k.agnhostFiles, Links: map[string]string{"/agnhost-2": "agnhost"},
		Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}}
}

// updateDemo is agnhost serving kubectl's Update Demo page.
func (k testImageKit) updateDemo(name, tag string) Image {
	img := k.agnhost(name, tag)
	img.Files, img.Cmd = updateDemoPage(name, k.agnhostFiles), []string{"test-webserver"}
	return img
}

func (k testImageKit) nginx(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Userland,
		Files:      map[string][]byte{"/etc/nginx/sites-enabled/default": []byte(nginxSite)},
		Entrypoint: []string{"nginx", "-g", "daemon off;"}}
}

func (k testImageKit) busybox(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Busybox, Cmd: []string{"sh"}}
}

func (k testImageKit) dnsutils(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Userland, Cmd: []string{"sh"}}
}

func (k testImageKit) nonroot(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Busybox, Cmd: []string{"sh"}, User: "1234"}
}

func (k testImageKit) nonewprivs(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag, BaseRootfs: k.roots.Busybox,
		Binaries: map[string]string{"/usr/local/bin/nnp": k.bin("nonewprivs")}, Setuid: []string{"/usr/local/bin/nnp"},
		Cmd: []string{"nnp"}}
}

func (k testImageKit) sampleAPIServer(name, tag string) Image {
	return Image{Repo: e2eRepo + name, Tag: tag,
		Binaries: map[string]string{"/sample-apiserver": k.bin("sample-apiserver")}, Entrypoint: []string{"/sample-apiserver"}}
}

// etcd is the project's etcd and etcdctl, under the tag the suite names
// (the aggregator test's etcd; gcEtcdRegistry, no e2e-test-images prefix).
func (k testImageKit) etcd(name, tag string) Image {
	return Image{Repo: name, Tag: tag, Binaries: map[string]string{"/usr/local/bin/etcd": "etcd", "/usr/local/bin/etcdctl": "etcdctl"},
		Entrypoint: []string{"/usr/local/bin/etcd"}}
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
// picture is a small one drawn here, a colour for each image. Their
// os-release says what they stand in for: v1.36's ImageVolume test
// mounts kitten as a volume and reads its etc/os-release for "Alpine
// Linux", the base of upstream's image; this one's userland is Debian's.
func updateDemoPage(name string, base map[string][]byte) map[string][]byte {
	files := maps.Clone(base)
	files["/data.json"] = fmt.Appendf(nil, "{\n  \"image\": \"%s.jpg\"\n}\n", name)
	files["/"+name+".jpg"] = picture(name)
	files["/etc/os-release"] = fmt.Appendf(nil, "NAME=\"k8sapi test image\"\nID=k8sapi-test-image\n"+
		"PRETTY_NAME=\"k8sapi's %s: a Debian userland standing in for upstream's %s on Alpine Linux\"\n", name, name)
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
