package artifacts

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// Arches are the node architectures artifacts are pinned for, named as the
// prereqs script names a host's (uname -m x86_64 is amd64, aarch64 arm64).
var Arches = []string{"amd64", "arm64"}

// FoundingArch is the architecture founding requires every file pinned
// for. The compute API names no architecture for an image or an instance
// type, so k8sapi cannot know a VM's; the control-plane images are amd64.
const FoundingArch = "amd64"

// File is one download of the prereqs script for a node of Arch:
// the Key the script asks for it by, the Name the artifact manifest pins it
// by, its URL, and where its digest is published beside it (SumsURL), under
// which name (SumsEntry; "" for a file holding the bare digest).
type File struct {
	Key, Arch, Name         string
	URL, SumsURL, SumsEntry string
}

// artifactFiles is the one table of what a node downloads (the prereqs
// script's full run), each row upstream's release layout below the
// artifact's configured base. Founding checks these names against the
// manifest, the prereqs script gets the rows rendered (download_artifact)
// and scripts/pin-artifacts.sh fetches upstream's digests by them.
var artifactFiles = []func(a Set, kubernetesVersion, arch string) File{
	kubeBinary("kubelet"), kubeBinary("kubectl"),
	func(a Set, _, arch string) File {
		f := "etcd-" + a.EtcdVersion + "-linux-" + arch + ".tar.gz"
		return released("etcd", f, a.EtcdDownloadBase+"/"+a.EtcdVersion+"/"+f, a.EtcdDownloadBase+"/"+a.EtcdVersion+"/SHA256SUMS", f)
	},
	func(a Set, _, arch string) File {
		f := "containerd-" + strings.TrimPrefix(a.ContainerdVersion, "v") + "-linux-" + arch + ".tar.gz"
		url := a.ContainerdDownloadBase + "/" + a.ContainerdVersion + "/" + f
		return released("containerd", f, url, url+".sha256sum", f)
	},
	func(a Set, _, arch string) File { // runc.<arch>: the name says neither version nor OS
		dir := a.RuncDownloadBase + "/" + a.RuncVersion + "/"
		return released("runc", "runc-"+a.RuncVersion+"-linux-"+arch, dir+"runc."+arch, dir+"runc.sha256sum", "runc."+arch)
	},
	func(a Set, _, arch string) File {
		f := "cni-plugins-linux-" + arch + "-" + a.CNIPluginsVersion + ".tgz"
		url := a.CNIPluginsDownloadBase + "/" + a.CNIPluginsVersion + "/" + f
		return released("cni-plugins", f, url, url+".sha256", f)
	},
	func(a Set, _, arch string) File {
		f := "helm-" + a.HelmVersion + "-linux-" + arch + ".tar.gz"
		return released("helm", f, a.HelmDownloadBase+"/"+f, a.HelmDownloadBase+"/"+f+".sha256sum", f)
	},
}

// kubeBinary is dl.k8s.io's layout: a bare binary beside a bare digest, the
// version and architecture in the path only (so the manifest's name adds them).
func kubeBinary(bin string) func(Set, string, string) File {
	return func(a Set, k8s, arch string) File {
		url := a.KubeDownloadBase + "/" + k8s + "/bin/linux/" + arch + "/" + bin
		return released(bin, bin+"-"+k8s+"-linux-"+arch, url, url+".sha256", "")
	}
}

func released(key, name, url, sumsURL, sumsEntry string) File {
	return File{Key: key, Name: name, URL: url, SumsURL: sumsURL, SumsEntry: sumsEntry}
}

// ciliumOnly are the table's keys only a Cilium cluster downloads: helm
// exists to install Cilium.
var ciliumOnly = map[string]bool{"helm": true}

// Files lists the files nodes download for a cluster of kubernetesVersion
// and cni, architecture by architecture (Arches), each in table order. An
// empty cni lists every file (what a manifest may pin).
func (a Set) Files(kubernetesVersion string, cni clusterfacts.CNI) []File {
	a = a.trimmedBases()
	var out []File
	for _, arch := range Arches {
		for _, file := range artifactFiles {
			f := file(a, kubernetesVersion, arch)
			f.Arch = arch
			if ciliumOnly[f.Key] && cni != "" && cni != clusterfacts.CNICilium {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// trimmedBases is a with no base ending in "/", so a base given either way
// makes the same URLs.
func (a Set) trimmedBases() Set {
	for _, base := range []*string{&a.KubeDownloadBase, &a.EtcdDownloadBase, &a.HelmDownloadBase,
		&a.ContainerdDownloadBase, &a.RuncDownloadBase, &a.CNIPluginsDownloadBase} {
		*base = strings.TrimSuffix(*base, "/")
	}
	return a
}

// Record is the artifact set a cluster of kubernetesVersion is founded
// with: a, its pins narrowed to the files those versions need on every
// architecture the manifest covers. Stored with the cluster, it is what
// its bundles render, whatever the configuration says later.
func (a Set) Record(kubernetesVersion string, cni clusterfacts.CNI) Set {
	pins := map[string]string{}
	for _, f := range a.Files(kubernetesVersion, cni) {
		if d, ok := a.SHA256[f.Name]; ok {
			pins[f.Name] = d
		}
	}
	a.SHA256 = pins
	return a
}

// Unpinned lists the files a node of arch downloads that a pins no digest
// for, in table order.
func (a Set) Unpinned(kubernetesVersion string, cni clusterfacts.CNI, arch string) []string {
	var out []string
	for _, f := range a.Files(kubernetesVersion, cni) {
		if _, ok := a.SHA256[f.Name]; f.Arch == arch && !ok {
			out = append(out, f.Name)
		}
	}
	return out
}

// PinPlan is what scripts/pin-artifacts.sh fetches: one line per file of
// a's versions on every architecture, "<manifest name> <URL> <published
// digest URL> <entry there, or - for a bare digest>".
func PinPlan(a Set, kubernetesVersion string) string {
	var b strings.Builder
	for _, f := range a.Files(kubernetesVersion, "") {
		entry := f.SumsEntry
		if entry == "" {
			entry = "-"
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", f.Name, f.URL, f.SumsURL, entry)
	}
	return b.String()
}
