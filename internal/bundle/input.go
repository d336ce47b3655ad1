package bundle

import (
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/validation"
)

// Input is everything one bundle is rendered from.
type Input struct {
	Cluster   clusterfacts.Cluster
	Nodes     []clusterfacts.Node // every control-plane peer, this VM included
	SelfVMID  int64               // the VM the bundle is for
	Artifacts artifacts.Set
	// CACerts holds the certificate PEMs of ca, etcd-ca and front-proxy-ca.
	// Never CA keys: VMs never get them.
	CACerts                                    map[pki.Name][]byte
	ServiceAccountKeyPEM, ServiceAccountPubPEM []byte
	// Identities holds this node's stored serving pairs (etcd-peer,
	// apiserver) and every PhaseFetch identity minted for this fetch.
	Identities map[pki.Name]pki.KeyPair
	// SecretsEncryptionKey is the key the API servers encrypt Secrets in
	// etcd with (pki.SecretsEncryptionKeySize bytes). Empty for a cluster
	// founded before k8sapi made one: its bundles render no encryption.
	SecretsEncryptionKey []byte
	// EtcdCRLPEM is the cluster's current etcd CRL (signed by its etcd
	// CA; an empty one while nothing is revoked): always there, since
	// etcd refuses every handshake while its CRL file is missing.
	EtcdCRLPEM []byte
}

// requiredCAs are the CA certificates every bundle carries.
var requiredCAs = []pki.Name{pki.ClusterCA, pki.EtcdCA, pki.FrontProxyCA}

// RequiredIdentities lists the key pairs a node's bundle carries, in
// cert-table order: its stored serving pairs and the per-fetch identities it
// gets (the initial node's include the addons' system:masters one).
func RequiredIdentities(initial bool) []pki.Name {
	return append(pki.IssuedTo(pki.PhaseFounding, initial), pki.IssuedTo(pki.PhaseFetch, initial)...)
}

// IsInitial reports whether the input's own node is the cluster's initial
// control-plane node (the lowest ordinal), false if it is no node of it.
func (in *Input) IsInitial() bool {
	topo, err := newTopology(in.Nodes, in.SelfVMID)
	return err == nil && topo.isInitial
}

var (
	dnsNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`)
	tokenRE   = regexp.MustCompile(`^[A-Za-z0-9._/:@+-]+$`) // URLs, chart refs, registries: no spaces or quotes
	// artifactVersionRE is looser than versionRE: pause is "3.10.1", etcd "v3.6.10".
	artifactVersionRE = regexp.MustCompile(`^v?[0-9][0-9A-Za-z.+-]*$`)
)

// validate collects every problem of the input with its field path, so one
// bad request says everything that is wrong with it. The rules are tables,
// one per part of the input, checked in this order.
func (in *Input) validate() error {
	return validation.Join(clusterRules(in.Cluster), networkRules(in.Cluster, in.Nodes), nodeRules(in.Nodes, in.SelfVMID),
		artifactRules(in.Artifacts), secretRules(in))
}

// rule is a row of the tables: field, whether its value passes, message.
var rule = validation.Check

func clusterRules(c clusterfacts.Cluster) []validation.Rule {
	_, _, serviceErr := clusterfacts.ServiceIPs(c.ServiceCIDR)
	_, _, podErr := net.ParseCIDR(c.PodCIDR)
	return []validation.Rule{
		rule("cluster.id", c.ID > 0, "must be positive"),
		rule("cluster.name", dnsNameRE.MatchString(c.Name), got("must be a lowercase DNS label", c.Name)),
		rule("cluster.control_plane_dns_name", dnsNameRE.MatchString(c.ControlPlaneDNSName), got("must be a lowercase DNS name", c.ControlPlaneDNSName)),
		rule("cluster.cluster_domain", dnsNameRE.MatchString(c.ClusterDomain), got("must be a lowercase DNS name", c.ClusterDomain)),
		rule("cluster.kubernetes_version", versionRE.MatchString(c.KubernetesVersion) && strings.HasPrefix(c.KubernetesVersion, "v"),
			got("must look like v1.35.4", c.KubernetesVersion)),
		rule("cluster.service_cidr", serviceErr == nil, validation.Describe(serviceErr)),
		rule("cluster.pod_cidr", podErr == nil, got("must be a CIDR", c.PodCIDR)),
	}
}

// networkRules: a known CNI and a pod CIDR its nodes' subnets fit in. A
// pod CIDR that is no CIDR at all is clusterRules' to report.
func networkRules(c clusterfacts.Cluster, nodes []clusterfacts.Node) []validation.Rule {
	rules := []validation.Rule{rule("cluster.cni", slices.Contains(clusterfacts.CNIs(), c.CNI), got(clusterfacts.CNIChoices(), string(c.CNI)))}
	if _, _, err := net.ParseCIDR(c.PodCIDR); err != nil {
		return rules
	}
	if err := podCIDRFits(c, nodes); err != nil {
		rules = append(rules, rule("cluster.pod_cidr", false, err.Error()))
	}
	return rules
}

// podCIDRFits: under the bridge CNI, the pod CIDR holds a node subnet for
// the highest ordinal (so for every node); under flannel, the controller
// manager can allocate node subnets from it; Cilium carves its own pool.
func podCIDRFits(c clusterfacts.Cluster, nodes []clusterfacts.Node) error {
	switch c.CNI {
	case clusterfacts.CNIFlannel:
		return clusterfacts.CheckAllocatedPodCIDR(c.PodCIDR)
	case clusterfacts.CNIBridge:
		last := 0
		for _, n := range nodes {
			last = max(last, n.Ordinal)
		}
		if last < 1 {
			return nil // no node: nodeRules say so
		}
		_, err := clusterfacts.NodePodCIDR(c.PodCIDR, last)
		return err
	}
	return nil
}

// nodeRules: every peer's own rules, each unique among the peers before it,
// and the bundle's VM among them.
func nodeRules(nodes []clusterfacts.Node, selfVMID int64) []validation.Rule {
	rules := []validation.Rule{rule("nodes", len(nodes) > 0, "must list every control-plane peer")}
	for i, n := range nodes {
		seen := func(same func(clusterfacts.Node) bool) bool { return slices.ContainsFunc(nodes[:i], same) }
		f := fmt.Sprintf("nodes[%d]", i)
		rules = append(rules,
			rule(f+".vm_id", n.VMID > 0 && !seen(func(o clusterfacts.Node) bool { return o.VMID == n.VMID }),
				fmt.Sprintf("must be positive and unique, got %d", n.VMID)),
			rule(f+".ordinal", n.Ordinal > 0 && !seen(func(o clusterfacts.Node) bool { return o.Ordinal == n.Ordinal }),
				fmt.Sprintf("must be positive and unique, got %d", n.Ordinal)),
			rule(f+".name", dnsNameRE.MatchString(n.Name) && !seen(func(o clusterfacts.Node) bool { return o.Name == n.Name }),
				got("must be a unique lowercase DNS name", n.Name)),
			rule(f+".ipv4", isIPv4(n.IPv4), got("must be an IPv4 address", n.IPv4)),
			rule(f+".ipv6", n.IPv6 == "" || isIPv6(n.IPv6), got("must be empty or an IPv6 address", n.IPv6)),
			rule(f+".public_ipv4", n.PublicIPv4 == "" || isIPv4(n.PublicIPv4), got("must be empty or an IPv4 address", n.PublicIPv4)),
		)
	}
	self := slices.ContainsFunc(nodes, func(n clusterfacts.Node) bool { return n.VMID == selfVMID })
	return append(rules, rule("self_vm_id", self, fmt.Sprintf("VM %d is not one of the nodes", selfVMID)))
}

func artifactRules(a artifacts.Set) []validation.Rule {
	rules := []validation.Rule{
		rule("artifacts.kube_download_base", isDownloadURL(a.KubeDownloadBase), got("must be an http(s) URL", a.KubeDownloadBase)),
		rule("artifacts.etcd_download_base", isDownloadURL(a.EtcdDownloadBase), got("must be an http(s) URL", a.EtcdDownloadBase)),
		rule("artifacts.helm_download_base", isDownloadURL(a.HelmDownloadBase), got("must be an http(s) URL", a.HelmDownloadBase)),
		rule("artifacts.containerd_download_base", isDownloadURL(a.ContainerdDownloadBase), got("must be an http(s) URL", a.ContainerdDownloadBase)),
		rule("artifacts.runc_download_base", isDownloadURL(a.RuncDownloadBase), got("must be an http(s) URL", a.RuncDownloadBase)),
		rule("artifacts.cni_plugins_download_base", isDownloadURL(a.CNIPluginsDownloadBase), got("must be an http(s) URL", a.CNIPluginsDownloadBase)),
		rule("artifacts.cilium_chart", tokenRE.MatchString(a.CiliumChart), got(referenceRule, a.CiliumChart)),
		rule("artifacts.image_registry", tokenRE.MatchString(a.ImageRegistry), got(referenceRule, a.ImageRegistry)),
		rule("artifacts.etcd_version", artifactVersionRE.MatchString(a.EtcdVersion), got("must be a version", a.EtcdVersion)),
		rule("artifacts.helm_version", artifactVersionRE.MatchString(a.HelmVersion), got("must be a version", a.HelmVersion)),
		rule("artifacts.containerd_version", versionRE.MatchString(a.ContainerdVersion) && strings.HasPrefix(a.ContainerdVersion, "v"),
			got("must look like v2.2.9", a.ContainerdVersion)),
		rule("artifacts.runc_version", artifactVersionRE.MatchString(a.RuncVersion), got("must be a version", a.RuncVersion)),
		rule("artifacts.cni_plugins_version", artifactVersionRE.MatchString(a.CNIPluginsVersion), got("must be a version", a.CNIPluginsVersion)),
		rule("artifacts.cilium_version", artifactVersionRE.MatchString(a.CiliumVersion), got("must be a version", a.CiliumVersion)),
		rule("artifacts.flannel_version", artifactVersionRE.MatchString(a.FlannelVersion), got("must be a version", a.FlannelVersion)),
		rule("artifacts.coredns_version", artifactVersionRE.MatchString(a.CoreDNSVersion), got("must be a version", a.CoreDNSVersion)),
		rule("artifacts.pause_version", artifactVersionRE.MatchString(a.PauseVersion), got("must be a version", a.PauseVersion)),
	}
	for _, file := range slices.Sorted(maps.Keys(a.SHA256)) {
		rules = append(rules, rule("artifacts.sha256["+file+"]",
			artifacts.IsPin(file, a.SHA256[file]), "must map a file name to a lowercase hex SHA-256"))
	}
	return rules
}

// secretRules: the CA certificates, the service-account pair and every
// identity the bundle carries are present.
func secretRules(in *Input) []validation.Rule {
	var rules []validation.Rule
	for _, name := range requiredCAs {
		rules = append(rules, rule("ca_certs."+string(name), len(in.CACerts[name]) > 0, "missing"))
	}
	rules = append(rules,
		rule("service_account_key", len(in.ServiceAccountKeyPEM) > 0, "missing"),
		rule("service_account_pub", len(in.ServiceAccountPubPEM) > 0, "missing"),
		rule("secrets_encryption_key", len(in.SecretsEncryptionKey) == 0 || len(in.SecretsEncryptionKey) == pki.SecretsEncryptionKeySize,
			fmt.Sprintf("must be empty or %d bytes, got %d", pki.SecretsEncryptionKeySize, len(in.SecretsEncryptionKey))))
	crl, _ := pem.Decode(in.EtcdCRLPEM)
	rules = append(rules, rule("etcd_crl", crl != nil && crl.Type == "X509 CRL", "must be a PEM CRL"))
	for _, name := range RequiredIdentities(in.IsInitial()) {
		kp := in.Identities[name]
		rules = append(rules, rule("identities."+string(name), len(kp.CertPEM) > 0 && len(kp.KeyPEM) > 0, "missing certificate or key"))
	}
	return rules
}

const referenceRule = "must be a non-empty reference without spaces or quotes"

// got is a rule's message naming the value it refused.
func got(want, value string) string { return fmt.Sprintf("%s, got %q", want, value) }

func isIPv4(s string) bool { ip := net.ParseIP(s); return ip != nil && ip.To4() != nil }

func isIPv6(s string) bool { ip := net.ParseIP(s); return ip != nil && ip.To4() == nil }

// isDownloadURL: an absolute http(s) URL that is safe to render unquoted.
func isDownloadURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && tokenRE.MatchString(s)
}
