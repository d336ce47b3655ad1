// Package artifacts is what a node downloads and how each download is
// verified: the artifact set a cluster records at founding (sources,
// versions, the image registry, pins), its defaults, the one table of
// files per architecture, and the artifact manifest k8sapi ships. It sits
// below the configuration (internal/config reads the variables that set
// it) and the renderer (internal/bundle renders it into every bundle), so
// neither imports the other for it.
package artifacts

// UpstreamImageRegistry is Kubernetes' own registry, the default
// ImageRegistry: the control plane, kube-proxy, CoreDNS and pause are
// published there. An image upstream publishes elsewhere (flannel's, at
// ghcr.io) is pulled from its own home while a cluster's registry is this
// one, and from the cluster's registry when that is a mirror: a mirror
// holds every image under the same repository names.
const UpstreamImageRegistry = "registry.k8s.io"

// Set says where a node downloads binaries, charts and images from,
// which versions, and how each download is verified. Point the bases at a
// mirror for an air-gapped install. A cluster records its set at founding
// (Record; the JSON names are that record's and must not change).
type Set struct {
	KubeDownloadBase string `json:"kube_download_base"` // <base>/<k8s version>/bin/linux/<arch>/<bin> (+ .sha256)
	EtcdDownloadBase string `json:"etcd_download_base"` // <base>/<etcd version>/etcd-<v>-linux-<arch>.tar.gz (+ SHA256SUMS)
	EtcdVersion      string `json:"etcd_version"`
	HelmDownloadBase string `json:"helm_download_base"` // <base>/helm-<v>-linux-<arch>.tar.gz (+ .sha256sum)
	HelmVersion      string `json:"helm_version"`
	// The container runtime comes from release artifacts, never the
	// distribution: Debian 12's containerd 1.6 is outside what Kubernetes
	// 1.35 supports (2.2.0+, 2.1.5+, 1.7.28+).
	ContainerdDownloadBase string `json:"containerd_download_base"` // <base>/<v>/containerd-<v without "v">-linux-<arch>.tar.gz (+ .sha256sum)
	ContainerdVersion      string `json:"containerd_version"`
	RuncDownloadBase       string `json:"runc_download_base"` // <base>/<v>/runc.<arch> (+ runc.sha256sum)
	RuncVersion            string `json:"runc_version"`
	CNIPluginsDownloadBase string `json:"cni_plugins_download_base"` // <base>/<v>/cni-plugins-linux-<arch>-<v>.tgz (+ .sha256)
	CNIPluginsVersion      string `json:"cni_plugins_version"`
	CiliumChart            string `json:"cilium_chart"`
	CiliumVersion          string `json:"cilium_version"`
	// FlannelVersion is flanneld's image tag under the flannel CNI
	// (<registry>/flannel-io/flannel:<version>; internal/bundle/images.go).
	FlannelVersion string `json:"flannel_version"`
	// ImageRegistry holds every image a node runs: the control plane,
	// kube-proxy, CoreDNS, pause and flannel. Upstream's (the default),
	// each image comes from where upstream publishes it (images.go).
	ImageRegistry string `json:"image_registry"`
	// ImageRegistryPlainHTTP: containerd pulls from ImageRegistry over plain
	// HTTP (a registry on a private network, as kind's local registry).
	ImageRegistryPlainHTTP bool   `json:"image_registry_plain_http"`
	CoreDNSVersion         string `json:"coredns_version"`
	PauseVersion           string `json:"pause_version"`
	// SHA256 pins digests by artifact file name (artifactFiles, files.go: the names
	// kubelet-v1.35.4-linux-amd64, etcd-v3.6.10-linux-amd64.tar.gz, ...).
	// Rendered into /etc/exk8s/config/artifacts.sha256; the prereqs script
	// refuses a download it pins nothing for unless DigestFallback is set.
	SHA256 map[string]string `json:"sha256"`
	// DigestFallback is the operator's explicit allowance to check an
	// artifact no pin covers against the digest published beside it, that
	// is, to trust whatever the mirror serves.
	DigestFallback bool `json:"digest_fallback"`
}

// DefaultKubernetesVersion is the Kubernetes version clusters are founded
// with unless configured (KUBERNETES_VERSION); the artifacts below are the
// versions that go with it.
const DefaultKubernetesVersion = "v1.35.4"

// Default is the upstream sources and versions.
func Default() Set {
	return Set{
		KubeDownloadBase:       "https://dl.k8s.io",
		EtcdDownloadBase:       "https://github.com/etcd-io/etcd/releases/download",
		EtcdVersion:            "v3.6.10",
		HelmDownloadBase:       "https://get.helm.sh",
		HelmVersion:            "v3.19.2",
		ContainerdDownloadBase: "https://github.com/containerd/containerd/releases/download",
		ContainerdVersion:      "v2.2.9",
		RuncDownloadBase:       "https://github.com/opencontainers/runc/releases/download",
		RuncVersion:            "v1.3.6",
		CNIPluginsDownloadBase: "https://github.com/containernetworking/plugins/releases/download",
		CNIPluginsVersion:      "v1.9.1",
		CiliumChart:            "oci://quay.io/cilium/charts/cilium",
		CiliumVersion:          "1.19.2",
		FlannelVersion:         "v0.28.10",
		ImageRegistry:          UpstreamImageRegistry,
		CoreDNSVersion:         "v1.13.1",
		PauseVersion:           "3.10.1",
	}
}
