package bundle

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/pki"
)

// Cluster is the cluster-wide facts a bundle renders.
type Cluster struct {
	OrgID, ID           int64
	Name                string // exk8s-7-2a
	ControlPlaneDNSName string // exk8s-7-2a.k8s.excloud.co.in
	KubernetesVersion   string // v1.35.4
	ClusterDomain       string // cluster.local
	ServiceCIDR         string // 10.96.0.0/12
	PodCIDR             string // 172.16.0.0/12
}

// Node is one control-plane peer.
type Node struct {
	VMID       int64
	Ordinal    int    // 1-based position in the control plane; the lowest is the initial node
	Name       string // cp-1.cluster-42.internal
	IPv4       string // private address every component binds to
	IPv6       string // optional
	PublicIPv4 string // optional
}

// Artifacts says where a node downloads binaries, charts and images from, and
// which versions. Point the bases at a mirror for an air-gapped install.
type Artifacts struct {
	KubeDownloadBase string // <base>/<k8s version>/bin/linux/<arch>/<bin> (+ .sha256)
	EtcdDownloadBase string // <base>/<etcd version>/etcd-<v>-linux-<arch>.tar.gz (+ SHA256SUMS)
	EtcdVersion      string
	HelmDownloadBase string // <base>/helm-<v>-linux-<arch>.tar.gz (+ .sha256sum)
	HelmVersion      string
	CiliumChart      string
	CiliumVersion    string
	ImageRegistry    string // control-plane, kube-proxy, CoreDNS and pause images
	CoreDNSVersion   string
	PauseVersion     string
	// SHA256 pins digests by artifact file name (kubelet-v1.35.4-linux-amd64,
	// etcd-v3.6.10-linux-amd64.tar.gz, helm-v3.19.2-linux-arm64.tar.gz).
	// Rendered into /etc/exk8s/config/artifacts.sha256; artifacts not pinned
	// are checked against the digest published beside them.
	SHA256 map[string]string
}

// DefaultArtifacts returns the upstream sources and versions.
func DefaultArtifacts() Artifacts {
	return Artifacts{
		KubeDownloadBase: "https://dl.k8s.io",
		EtcdDownloadBase: "https://github.com/etcd-io/etcd/releases/download",
		EtcdVersion:      "v3.6.10",
		HelmDownloadBase: "https://get.helm.sh",
		HelmVersion:      "v3.19.2",
		CiliumChart:      "oci://quay.io/cilium/charts/cilium",
		CiliumVersion:    "1.19.2",
		ImageRegistry:    "registry.k8s.io",
		CoreDNSVersion:   "v1.13.1",
		PauseVersion:     "3.10.1",
	}
}

// Input is everything one bundle is rendered from.
type Input struct {
	Cluster   Cluster
	Nodes     []Node // every control-plane peer, this VM included
	SelfVMID  int64  // the VM the bundle is for
	Artifacts Artifacts
	// CACerts holds the certificate PEMs of ca, etcd-ca and front-proxy-ca.
	// Never CA keys: VMs never get them.
	CACerts                                    map[pki.Name][]byte
	ServiceAccountKeyPEM, ServiceAccountPubPEM []byte
	// Identities holds this node's stored serving pairs (etcd-peer,
	// apiserver) and every PhaseFetch identity minted for this fetch.
	Identities map[pki.Name]pki.KeyPair
}

// requiredCAs are the CA certificates every bundle carries.
var requiredCAs = []pki.Name{pki.ClusterCA, pki.EtcdCA, pki.FrontProxyCA}

// RequiredIdentities lists the key pairs a bundle needs, in cert-table
// order: the node's stored serving pairs and every per-fetch identity.
func RequiredIdentities() []pki.Name {
	return append(pki.Names(pki.PhaseFounding), pki.Names(pki.PhaseFetch)...)
}

var (
	dnsNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`)
	tokenRE   = regexp.MustCompile(`^[A-Za-z0-9._/:@+-]+$`) // URLs, chart refs, registries: no spaces or quotes
	// artifactVersionRE is looser than versionRE: pause is "3.10.1", etcd "v3.6.10".
	artifactVersionRE = regexp.MustCompile(`^v?[0-9][0-9A-Za-z.+-]*$`)
	sha256RE          = regexp.MustCompile(`^[0-9a-f]{64}$`)
	artifactRE        = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
)

// validate collects every problem of the input with its field path, so one
// bad request says everything that is wrong with it.
func (in *Input) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	c := in.Cluster
	if c.ID <= 0 {
		bad("cluster.id", "must be positive")
	}
	if !dnsNameRE.MatchString(c.Name) {
		bad("cluster.name", "must be a lowercase DNS label, got %q", c.Name)
	}
	if !dnsNameRE.MatchString(c.ControlPlaneDNSName) {
		bad("cluster.control_plane_dns_name", "must be a lowercase DNS name, got %q", c.ControlPlaneDNSName)
	}
	if !dnsNameRE.MatchString(c.ClusterDomain) {
		bad("cluster.cluster_domain", "must be a lowercase DNS name, got %q", c.ClusterDomain)
	}
	if !versionRE.MatchString(c.KubernetesVersion) || !strings.HasPrefix(c.KubernetesVersion, "v") {
		bad("cluster.kubernetes_version", "must look like v1.35.4, got %q", c.KubernetesVersion)
	}
	if _, _, err := ServiceIPs(c.ServiceCIDR); err != nil {
		bad("cluster.service_cidr", "%v", err)
	}
	if _, _, err := net.ParseCIDR(c.PodCIDR); err != nil {
		bad("cluster.pod_cidr", "must be a CIDR, got %q", c.PodCIDR)
	}

	if len(in.Nodes) == 0 {
		bad("nodes", "must list every control-plane peer")
	}
	seenVM, seenOrdinal, seenName := map[int64]bool{}, map[int]bool{}, map[string]bool{}
	self := false
	for i, n := range in.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		if n.VMID <= 0 || seenVM[n.VMID] {
			bad(f+".vm_id", "must be positive and unique, got %d", n.VMID)
		}
		if n.Ordinal <= 0 || seenOrdinal[n.Ordinal] {
			bad(f+".ordinal", "must be positive and unique, got %d", n.Ordinal)
		}
		if !dnsNameRE.MatchString(n.Name) || seenName[n.Name] {
			bad(f+".name", "must be a unique lowercase DNS name, got %q", n.Name)
		}
		if ip := net.ParseIP(n.IPv4); ip == nil || ip.To4() == nil {
			bad(f+".ipv4", "must be an IPv4 address, got %q", n.IPv4)
		}
		if ip := net.ParseIP(n.IPv6); n.IPv6 != "" && (ip == nil || ip.To4() != nil) {
			bad(f+".ipv6", "must be empty or an IPv6 address, got %q", n.IPv6)
		}
		if ip := net.ParseIP(n.PublicIPv4); n.PublicIPv4 != "" && (ip == nil || ip.To4() == nil) {
			bad(f+".public_ipv4", "must be empty or an IPv4 address, got %q", n.PublicIPv4)
		}
		seenVM[n.VMID], seenOrdinal[n.Ordinal], seenName[n.Name] = true, true, true
		self = self || n.VMID == in.SelfVMID
	}
	if !self {
		bad("self_vm_id", "VM %d is not one of the nodes", in.SelfVMID)
	}

	a := in.Artifacts
	for _, f := range []struct{ field, value string }{
		{"artifacts.kube_download_base", a.KubeDownloadBase},
		{"artifacts.etcd_download_base", a.EtcdDownloadBase},
		{"artifacts.helm_download_base", a.HelmDownloadBase},
	} {
		if u, err := url.Parse(f.value); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !tokenRE.MatchString(f.value) {
			bad(f.field, "must be an http(s) URL, got %q", f.value)
		}
	}
	for _, f := range []struct{ field, value string }{
		{"artifacts.cilium_chart", a.CiliumChart},
		{"artifacts.image_registry", a.ImageRegistry},
	} {
		if !tokenRE.MatchString(f.value) {
			bad(f.field, "must be a non-empty reference without spaces or quotes, got %q", f.value)
		}
	}
	for _, f := range []struct{ field, value string }{
		{"artifacts.etcd_version", a.EtcdVersion},
		{"artifacts.helm_version", a.HelmVersion},
		{"artifacts.cilium_version", a.CiliumVersion},
		{"artifacts.coredns_version", a.CoreDNSVersion},
		{"artifacts.pause_version", a.PauseVersion},
	} {
		if !artifactVersionRE.MatchString(f.value) {
			bad(f.field, "must be a version, got %q", f.value)
		}
	}
	for _, file := range slices.Sorted(maps.Keys(a.SHA256)) {
		if !artifactRE.MatchString(file) || !sha256RE.MatchString(a.SHA256[file]) {
			bad("artifacts.sha256["+file+"]", "must map a file name to a lowercase hex SHA-256")
		}
	}

	for _, name := range requiredCAs {
		if len(in.CACerts[name]) == 0 {
			bad("ca_certs."+string(name), "missing")
		}
	}
	if len(in.ServiceAccountKeyPEM) == 0 {
		bad("service_account_key", "missing")
	}
	if len(in.ServiceAccountPubPEM) == 0 {
		bad("service_account_pub", "missing")
	}
	for _, name := range RequiredIdentities() {
		kp := in.Identities[name]
		if len(kp.CertPEM) == 0 || len(kp.KeyPEM) == 0 {
			bad("identities."+string(name), "missing certificate or key")
		}
	}
	return errors.Join(errs...)
}
