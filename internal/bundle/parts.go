package bundle

import (
	"io/fs"
	"path"

	"github.com/excloud/k8sapi/internal/pki"
)

// Host paths of the bundle.
const (
	pkiDir        = "/etc/exk8s/pki"
	kubeconfigDir = "/etc/exk8s/kubeconfig"
	configDir     = "/etc/exk8s/config"
	addonDir      = "/etc/exk8s/manifests"
	staticPodDir  = "/etc/kubernetes/manifests"
	unitDir       = "/etc/systemd/system"
	binDir        = "/usr/local/bin"
)

// File modes: private keys, kubeconfigs (which embed keys) and the static
// pod manifests (the CIS benchmark's 1.1.1-1.1.5) are owner-only, scripts
// executable, everything else world-readable.
const (
	modeSecret fs.FileMode = 0o600
	modeScript fs.FileMode = 0o755
	modePublic fs.FileMode = 0o644
)

// fileSpec is one row of the bundle's spec table: an output path and how to
// make its content (a template and its data, or raw bytes).
type fileSpec struct {
	path     string
	mode     fs.FileMode
	template string // empty: content is raw
	data     any
	raw      []byte
}

// part is one component of the node; it returns the specs of its files.
type part struct {
	name  string
	files func(v *view) []fileSpec
}

// parts is the ordered list of the node's components (kOps nodeup's model).
func parts() []part {
	return []part{
		{"pki", pkiPart},
		{"kubeconfigs", kubeconfigPart},
		{"host-config", hostConfigPart},
		{"containerd", containerdPart},
		{"etcd", etcdPart},
		{"kubelet", kubeletPart},
		{"control-plane", controlPlanePart},
		{"apiserver-config", apiserverConfigPart},
		{"network", podNetworkPart},
		{"cilium-values", ciliumValuesPart},
		{"addons", addonPart},
		{"scripts", scriptPart},
		{"certificate-renewal", renewalPart},
		{"etcd-snapshot", snapshotPart},
		{"etcd-crl", etcdCRLPart},
		{"etcd-membership", etcdMembershipPart},
		{"addons-upgrade", addonsUpgradePart},
		{"control-plane-taint", controlPlaneTaintPart},
		{"drain", drainPart},
		{"health", healthPart},
	}
}

func tmpl(path, template string, mode fs.FileMode, data any) fileSpec {
	return fileSpec{path: path, mode: mode, template: template, data: data}
}

// CertPath and KeyPath are where the bundle writes a cert-table entry.
func CertPath(name pki.Name) string { return path.Join(pkiDir, string(name)+".pem") }
func KeyPath(name pki.Name) string  { return path.Join(pkiDir, string(name)+"-key.pem") }

// pkiPart writes the CA certificates (never their keys), the service-account
// key pair and this node's key pairs.
func pkiPart(v *view) []fileSpec {
	var out []fileSpec
	for _, name := range requiredCAs {
		out = append(out, fileSpec{path: CertPath(name), mode: modePublic, raw: v.in.CACerts[name]})
	}
	out = append(out,
		fileSpec{path: ServiceAccountPubPath, mode: modePublic, raw: v.in.ServiceAccountPubPEM},
		fileSpec{path: ServiceAccountKeyPath, mode: modeSecret, raw: v.in.ServiceAccountKeyPEM},
	)
	for _, name := range RequiredIdentities(v.IsInitial) {
		kp := v.in.Identities[name]
		out = append(out,
			fileSpec{path: CertPath(name), mode: modePublic, raw: kp.CertPEM},
			fileSpec{path: KeyPath(name), mode: modeSecret, raw: kp.KeyPEM},
		)
	}
	return out
}

// kubeconfigView is the kubeconfig template's data.
type kubeconfigView struct {
	ClusterName, Server, User, Context string
	CAPEM, CertPEM, KeyPEM             []byte
}

// kubeconfigSpec is one kubeconfig: its file stem, identity, user, context
// and server.
type kubeconfigSpec struct {
	stem     string
	identity pki.Name
	user     string
	context  string
	server   string
}

// AdminUser is the user entry of every admin kubeconfig of a cluster (the
// operator's and the initial node's): named after the cluster, like its
// cluster entry and context (AdminContext), so kubeconfigs of two clusters
// merge (KUBECONFIG=a:b kubectl config view --flatten, or --merge) without
// one cluster's user standing in for the other's.
func AdminUser(cluster string) string { return cluster + "-admin" }

// AdminContext is the context of every admin kubeconfig of a cluster: the
// cluster's name.
func AdminContext(cluster string) string { return cluster }

// componentContext is the context of a component's kubeconfig on a node:
// user@cluster, as kubeadm names them.
func componentContext(user, cluster string) string { return user + "@" + cluster }

// KubeconfigPath is where the bundle writes the kubeconfig with that stem.
func KubeconfigPath(stem string) string { return path.Join(kubeconfigDir, stem+".kubeconfig") }

// kubeconfigSpecs is kubeadm's kubeconfig spec table, ours: the controller
// manager and scheduler talk to their local apiserver over loopback; the
// others use the node's address, which the apiserver cert names.
func kubeconfigSpecs(v *view) []kubeconfigSpec {
	const loopback = "https://127.0.0.1:6443"
	cluster := v.Cluster.Name
	component := func(stem string, identity pki.Name, user, server string) kubeconfigSpec {
		return kubeconfigSpec{stem, identity, user, componentContext(user, cluster), server}
	}
	specs := []kubeconfigSpec{
		component("controller-manager", pki.ControllerManager, "system:kube-controller-manager", loopback),
		component("kubelet", pki.KubeletClient, "system:node:"+v.Node.Name, v.APIServerEndpoint),
		component("scheduler", pki.Scheduler, "system:kube-scheduler", loopback),
		component("control-plane-taint", pki.ControlPlaneTaint, ControlPlaneTaintUser, loopback),
		component(addonsKubeconfigStem, pki.AddonsApplier, AddonsUser, loopback),
	}
	if v.IsInitial { // the addons' identity (pki: InitialOnly), named as every admin kubeconfig
		admin := kubeconfigSpec{"admin", pki.Admin, AdminUser(cluster), AdminContext(cluster), v.APIServerEndpoint}
		specs = append([]kubeconfigSpec{admin}, specs...)
	}
	return specs
}

func kubeconfigPart(v *view) []fileSpec {
	var out []fileSpec
	for _, s := range kubeconfigSpecs(v) {
		kp := v.in.Identities[s.identity]
		out = append(out, tmpl(KubeconfigPath(s.stem), "kubeconfig", modeSecret, kubeconfigView{
			ClusterName: v.Cluster.Name, Server: s.server, User: s.user, Context: s.context,
			CAPEM: v.in.CACerts[pki.ClusterCA], CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM,
		}))
	}
	return out
}

func hostConfigPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(configDir+"/cluster.env", "cluster.env", modePublic, v),
		tmpl(configDir+"/artifacts.sha256", "artifacts.sha256", modePublic, v),
	}
}

func etcdPart(v *view) []fileSpec {
	files := []fileSpec{tmpl(unitDir+"/etcd.service", "etcd.service", modePublic, v)}
	return append(append(files, etcdJoinFiles(v)...), etcdRestoreFiles(v)...)
}

func containerdPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/containerd.service", "containerd.service", modePublic, v),
		// A prefix drop-in: it applies to every cri-containerd-<id>.scope.
		tmpl(unitDir+"/cri-containerd-.scope.d/10-exk8s-stop-timeout.conf", "cri-containerd-scope-stop.conf", modePublic, v),
	}
}

func kubeletPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/exk8s-imds-guard.service", "exk8s-imds-guard.service", modePublic, v),
		tmpl(binDir+"/exk8s-imds-guard.sh", "exk8s-imds-guard.sh", modeScript, v),
		tmpl(unitDir+"/kubelet.service", "kubelet.service", modePublic, v),
		tmpl("/var/lib/kubelet/config.yaml", "kubelet-config.yaml", modePublic, v),
	}
}

func controlPlanePart(v *view) []fileSpec {
	var out []fileSpec
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		out = append(out, tmpl(staticPodDir+"/"+c+".yaml", c+".yaml", modeSecret, v))
	}
	return out
}

// conflistView is the CNI bridge plugin's settings: the subnet its
// host-local IPAM hands out and whether the plugin masquerades pod traffic.
type conflistView struct {
	Subnet string
	IPMasq bool
}

// podNetworkPart is the pod network of the cluster's CNI. Under Cilium: a
// bridge conflist over the whole pod CIDR, so the kubelet has a network
// before Cilium (installed by the initial node's addons script) takes over
// with its own config. Under the bridge CNI: the node's own conflist over
// its pod subnet, not masquerading (pods reach pods by their addresses),
// and the unit and script that route the peers' subnets and masquerade
// only what leaves the pod CIDR. Under flannel: no conflist, but what
// writes it from flanneld's lease (flannel.go).
func podNetworkPart(v *view) []fileSpec {
	switch {
	case v.Flannel != nil:
		return flannelCNIFiles(v.Flannel)
	case v.PodNetwork == nil:
		return []fileSpec{tmpl(conflistPath, "10-exk8s.conflist", modePublic, conflistView{Subnet: v.Cluster.PodCIDR, IPMasq: true})}
	}
	return []fileSpec{
		tmpl(conflistPath, "10-exk8s.conflist", modePublic, conflistView{Subnet: v.PodNetwork.NodeSubnet}),
		tmpl(unitDir+"/exk8s-pod-network.service", "exk8s-pod-network.service", modePublic, v),
		tmpl(binDir+"/exk8s-pod-network.sh", "exk8s-pod-network.sh", modeScript, v.PodNetwork),
	}
}

// ciliumValuesPart is Cilium's helm values, for the initial node's addons
// script (every control-plane node carries them, as any may be replaced).
func ciliumValuesPart(v *view) []fileSpec {
	if !v.Cilium {
		return nil
	}
	return []fileSpec{tmpl(configDir+"/cilium-values.yaml", "cilium-values.yaml", modePublic, v)}
}

// addonPart is the cluster addons' manifests, for the initial node's
// addons script (every control-plane node carries them, as any may be
// replaced); flannel's under the flannel CNI.
func addonPart(v *view) []fileSpec {
	out := []fileSpec{tmpl(addonDir+"/control-plane-rbac.yaml", "control-plane-rbac.yaml", modePublic, v)}
	for _, a := range addonsOf(v.Cluster.CNI) {
		out = append(out, tmpl(addonDir+"/"+a.Name, a.Name, modePublic, v))
	}
	return out
}

// scriptPart writes the three bootstrap scripts and exk8s-progress.sh, the
// VM's shell library, which every script of the bundle sources (to report
// its phases to k8sapi, among others; shell.go).
func scriptPart(v *view) []fileSpec {
	var out []fileSpec
	for _, s := range []string{"exk8s-install-prereqs.sh", "exk8s-bootstrap-control-plane.sh", "exk8s-install-cluster-addons.sh", "exk8s-progress.sh"} {
		out = append(out, tmpl(binDir+"/"+s, s, modeScript, v))
	}
	return out
}
