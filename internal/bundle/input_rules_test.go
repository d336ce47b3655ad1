package bundle

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// TestValidateSaysEveryRuleExactly breaks every rule of the input at once:
// each problem is reported with its field path, in table order, in the
// exact words the operator reads.
func TestValidateSaysEveryRuleExactly(t *testing.T) {
	in := Input{
		Cluster: clusterfacts.Cluster{Name: "Bad Name", ControlPlaneDNSName: "-x", ClusterDomain: "", KubernetesVersion: "1.35.4",
			ServiceCIDR: "nope", PodCIDR: "10.0.0.0", CNI: "calico"},
		Nodes: []clusterfacts.Node{
			{VMID: 1, Ordinal: 1, Name: "cp-1", IPv4: "10.0.0.1", IPv6: "10.0.0.9", PublicIPv4: "fd00::1"},
			{VMID: 1, Ordinal: 1, Name: "cp-1", IPv4: "fd00::2"},
			{VMID: -3, Ordinal: 0, Name: "CP", IPv4: "", IPv6: "fd00::3", PublicIPv4: "203.0.113.3"},
		},
		SelfVMID: 9,
		Artifacts: artifacts.Set{KubeDownloadBase: "ftp://mirror", EtcdDownloadBase: "https://", HelmDownloadBase: "https://get.helm.sh/a b",
			EtcdVersion: "v3.6.10", HelmVersion: "latest", CiliumChart: "", CiliumVersion: "1.19.2", ImageRegistry: `reg"istry`,
			CoreDNSVersion: "", PauseVersion: "3.10.1",
			ContainerdDownloadBase: "https://mirror/containerd", ContainerdVersion: "2.2.9",
			RuncDownloadBase: "file:///runc", RuncVersion: "v1.3.6", CNIPluginsDownloadBase: "http://mirror/cni", CNIPluginsVersion: "v1.9.1",
			SHA256: map[string]string{"kubelet": "XYZ", "b/c": strings.Repeat("a", 64), "etcd.tar.gz": strings.Repeat("0", 64)}},
		CACerts:              map[pki.Name][]byte{pki.EtcdCA: []byte("x")},
		ServiceAccountPubPEM: []byte("x"),
		Identities:           map[pki.Name]pki.KeyPair{pki.EtcdPeer: {CertPEM: []byte("c")}},
	}
	want := []string{
		"cluster.id: must be positive",
		`cluster.name: must be a lowercase DNS label, got "Bad Name"`,
		`cluster.control_plane_dns_name: must be a lowercase DNS name, got "-x"`,
		`cluster.cluster_domain: must be a lowercase DNS name, got ""`,
		`cluster.kubernetes_version: must look like v1.35.4, got "1.35.4"`,
		`cluster.service_cidr: must be a CIDR, got "nope"`,
		`cluster.pod_cidr: must be a CIDR, got "10.0.0.0"`,
		`cluster.cni: must be "cilium", "bridge" or "flannel", got "calico"`,
		`nodes[0].ipv6: must be empty or an IPv6 address, got "10.0.0.9"`,
		`nodes[0].public_ipv4: must be empty or an IPv4 address, got "fd00::1"`,
		"nodes[1].vm_id: must be positive and unique, got 1",
		"nodes[1].ordinal: must be positive and unique, got 1",
		`nodes[1].name: must be a unique lowercase DNS name, got "cp-1"`,
		`nodes[1].ipv4: must be an IPv4 address, got "fd00::2"`,
		"nodes[2].vm_id: must be positive and unique, got -3",
		"nodes[2].ordinal: must be positive and unique, got 0",
		`nodes[2].name: must be a unique lowercase DNS name, got "CP"`,
		`nodes[2].ipv4: must be an IPv4 address, got ""`,
		"self_vm_id: VM 9 is not one of the nodes",
		`artifacts.kube_download_base: must be an http(s) URL, got "ftp://mirror"`,
		`artifacts.etcd_download_base: must be an http(s) URL, got "https://"`,
		`artifacts.helm_download_base: must be an http(s) URL, got "https://get.helm.sh/a b"`,
		`artifacts.runc_download_base: must be an http(s) URL, got "file:///runc"`,
		`artifacts.cilium_chart: must be a non-empty reference without spaces or quotes, got ""`,
		`artifacts.image_registry: must be a non-empty reference without spaces or quotes, got "reg\"istry"`,
		`artifacts.helm_version: must be a version, got "latest"`,
		`artifacts.containerd_version: must look like v2.2.9, got "2.2.9"`,
		`artifacts.flannel_version: must be a version, got ""`,
		`artifacts.coredns_version: must be a version, got ""`,
		"artifacts.sha256[b/c]: must map a file name to a lowercase hex SHA-256",
		"artifacts.sha256[kubelet]: must map a file name to a lowercase hex SHA-256",
		"ca_certs.ca: missing",
		"ca_certs.front-proxy-ca: missing",
		"service_account_key: missing",
		"etcd_crl: must be a PEM CRL",
	}
	for _, name := range RequiredIdentities(false) { // self is no node: not the initial one
		want = append(want, "identities."+string(name)+": missing certificate or key")
	}
	err := in.validate()
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("got:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if nodes := (&Input{}).validate(); nodes == nil || !strings.Contains(nodes.Error(), "nodes: must list every control-plane peer\n") {
		t.Errorf("no nodes: %v", nodes)
	}
}
