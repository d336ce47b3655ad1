package bundle

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
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

// ArtifactFile is one download of the prereqs script for a node of Arch:
// the Key the script asks for it by, the Name the artifact manifest pins it
// by, its URL, and where its digest is published beside it (SumsURL), under
// which name (SumsEntry; "" for a file holding the bare digest).
type ArtifactFile struct {
	Key, Arch, Name         string
	URL, SumsURL, SumsEntry string
}

// artifactFiles is the one table of what a node downloads (the prereqs
// script's full run), each row upstream's release layout below the
// artifact's configured base. Founding checks these names against the
// manifest, the prereqs script gets the rows rendered (download_artifact)
// and scripts/pin-artifacts.sh fetches upstream's digests by them.
var artifactFiles = []func(a Artifacts, kubernetesVersion, arch string) ArtifactFile{
	kubeBinary("kubelet"), kubeBinary("kubectl"),
	func(a Artifacts, _, arch string) ArtifactFile {
		f := "etcd-" + a.EtcdVersion + "-linux-" + arch + ".tar.gz"
		return released("etcd", f, a.EtcdDownloadBase+"/"+a.EtcdVersion+"/"+f, a.EtcdDownloadBase+"/"+a.EtcdVersion+"/SHA256SUMS", f)
	},
	func(a Artifacts, _, arch string) ArtifactFile {
		f := "containerd-" + strings.TrimPrefix(a.ContainerdVersion, "v") + "-linux-" + arch + ".tar.gz"
		url := a.ContainerdDownloadBase + "/" + a.ContainerdVersion + "/" + f
		return released("containerd", f, url, url+".sha256sum", f)
	},
	func(a Artifacts, _, arch string) ArtifactFile { // runc.<arch>: the name says neither version nor OS
		dir := a.RuncDownloadBase + "/" + a.RuncVersion + "/"
		return released("runc", "runc-"+a.RuncVersion+"-linux-"+arch, dir+"runc."+arch, dir+"runc.sha256sum", "runc."+arch)
	},
	func(a Artifacts, _, arch string) ArtifactFile {
		f := "cni-plugins-linux-" + arch + "-" + a.CNIPluginsVersion + ".tgz"
		url := a.CNIPluginsDownloadBase + "/" + a.CNIPluginsVersion + "/" + f
		return released("cni-plugins", f, url, url+".sha256", f)
	},
	func(a Artifacts, _, arch string) ArtifactFile {
		f := "helm-" + a.HelmVersion + "-linux-" + arch + ".tar.gz"
		return released("helm", f, a.HelmDownloadBase+"/"+f, a.HelmDownloadBase+"/"+f+".sha256sum", f)
	},
}

// kubeBinary is dl.k8s.io's layout: a bare binary beside a bare digest, the
// version and architecture in the path only (so the manifest's name adds them).
func kubeBinary(bin string) func(Artifacts, string, string) ArtifactFile {
	return func(a Artifacts, k8s, arch string) ArtifactFile {
		url := a.KubeDownloadBase + "/" + k8s + "/bin/linux/" + arch + "/" + bin
		return released(bin, bin+"-"+k8s+"-linux-"+arch, url, url+".sha256", "")
	}
}

func released(key, name, url, sumsURL, sumsEntry string) ArtifactFile {
	return ArtifactFile{Key: key, Name: name, URL: url, SumsURL: sumsURL, SumsEntry: sumsEntry}
}

// ciliumOnly are the table's keys only a Cilium cluster downloads: helm
// exists to install Cilium.
var ciliumOnly = map[string]bool{"helm": true}

// Files lists the files nodes download for a cluster of kubernetesVersion
// and cni, architecture by architecture (Arches), each in table order. An
// empty cni lists every file (what a manifest may pin).
func (a Artifacts) Files(kubernetesVersion string, cni clusterfacts.CNI) []ArtifactFile {
	a = a.trimmedBases()
	var out []ArtifactFile
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
func (a Artifacts) trimmedBases() Artifacts {
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
func (a Artifacts) Record(kubernetesVersion string, cni clusterfacts.CNI) Artifacts {
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
func (a Artifacts) Unpinned(kubernetesVersion string, cni clusterfacts.CNI, arch string) []string {
	var out []string
	for _, f := range a.Files(kubernetesVersion, cni) {
		if _, ok := a.SHA256[f.Name]; f.Arch == arch && !ok {
			out = append(out, f.Name)
		}
	}
	return out
}

// shippedManifest is k8sapi's own artifact manifest, reviewed like code
// (as kOps pins its hashes in code); scripts/pin-artifacts.sh fills it
// from upstream's published digests.
//
//go:embed artifact-pins.sha256
var shippedManifest string

// ShippedManifest is the artifact manifest k8sapi ships, parsed.
func ShippedManifest() (map[string]string, error) {
	pins, err := ParseManifest(shippedManifest)
	if err != nil {
		return nil, fmt.Errorf("the shipped artifact manifest: %w", err)
	}
	return pins, nil
}

// ParseManifest reads an artifact manifest: one "<sha256>  <file name>"
// line per artifact, as sha256sum writes them (a '*' before the name is
// allowed), blank lines and '#' comments skipped. Every bad line is
// reported by number; a file listed twice must have one digest.
func ParseManifest(text string) (map[string]string, error) {
	pins := map[string]string{}
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		if err := parseManifestLine(pins, strings.TrimSpace(line)); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
		}
	}
	return pins, errors.Join(errs...)
}

func parseManifestLine(pins map[string]string, line string) error {
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return errors.New(`want "<sha256>  <file name>"`)
	}
	digest, file := strings.ToLower(fields[0]), strings.TrimPrefix(fields[1], "*")
	switch {
	case !sha256RE.MatchString(digest):
		return fmt.Errorf("%q is not a hex SHA-256", fields[0])
	case !artifactRE.MatchString(file):
		return fmt.Errorf("%q is not an artifact file name", file)
	case pins[file] != "" && pins[file] != digest:
		return fmt.Errorf("%s is pinned twice with different digests", file)
	}
	pins[file] = digest
	return nil
}

// ManifestText renders pins as a manifest, sorted by file name.
func ManifestText(pins map[string]string) string {
	var b strings.Builder
	for _, f := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(&b, "%s  %s\n", pins[f], f)
	}
	return b.String()
}

// PinPlan is what scripts/pin-artifacts.sh fetches: one line per file of
// a's versions on every architecture, "<manifest name> <URL> <published
// digest URL> <entry there, or - for a bare digest>".
func PinPlan(a Artifacts, kubernetesVersion string) string {
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
