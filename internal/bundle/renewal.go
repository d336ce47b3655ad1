package bundle

import "github.com/excloud/k8sapi/internal/pki"

// Renewal unit and script, installed with every bundle and started once the
// node is ready (exk8s-bootstrap-control-plane.sh, exk8s-bootstrap-worker.sh).
// Every role's script has the same path, so one timer and unit serve them
// all; each role renders its own template there (renewalFiles).
const (
	RenewalScript = binDir + "/exk8s-renew-certificates.sh"
	RenewalTimer  = unitDir + "/exk8s-renew-certificates.timer"
)

// renewalView is what the renewal script needs to know: each identity it
// renews (pki.Renewable), where the node keeps it, and who reads it.
type renewalView struct {
	Identities   []renewableIdentity
	RestartOrder []string
	// Trust are the trust files a rotation rewrites (trustLines);
	// ClusterCA is the one every kubeconfig embeds.
	Trust     []string
	ClusterCA string
}

// renewableIdentity is one identity a renewal may re-issue: the node signs
// its request with KeyPath's key and writes the answered certificate to
// CertPath and, when one embeds it, into Kubeconfig; Component restarts.
type renewableIdentity struct {
	Name              pki.Name
	KeyPath, CertPath string
	Kubeconfig        string // "" when no kubeconfig embeds it
	Component         string
}

// readerOf is the one table of which component reads each renewable
// identity, so a renewal restarts exactly the components whose
// certificates changed.
var readerOf = map[pki.Name]string{
	pki.EtcdPeer:               "etcd",
	pki.APIServer:              "kube-apiserver",
	pki.APIServerEtcdClient:    "kube-apiserver",
	pki.APIServerKubeletClient: "kube-apiserver",
	pki.FrontProxyClient:       "kube-apiserver",
	pki.ControllerManager:      "kube-controller-manager",
	pki.Scheduler:              "kube-scheduler",
	pki.KubeletClient:          "kubelet",
	pki.KubeletServing:         "kubelet",
	pki.ControlPlaneTaint:      ControlPlaneTaintUnit,
	pki.AddonsApplier:          AddonsUnit + ".timer",
}

// restartOrder is the order a renewal restarts what it changed. The
// containers go first, while etcd still answers: an API server stopped
// after its local etcd had restarted waited about a minute on requests its
// broken etcd client could not finish before it exited; stopped first, it
// drains in seconds (the kubelet starts every stopped container again).
// etcd next, whose clients reconnect; the kubelet last.
// The taint's service last: it reads its kubeconfig on every round, and is
// restarted only to use the new certificate at once.
// The addons' timer too: its script reads its kubeconfig on every run, and
// a restarted timer only runs it a minute later.
var restartOrder = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kubelet", ControlPlaneTaintUnit,
	AddonsUnit + ".timer"}

func newRenewalView(v *view) renewalView {
	embeddedIn := map[pki.Name]string{}
	for _, s := range kubeconfigSpecs(v) {
		embeddedIn[s.identity] = KubeconfigPath(s.stem)
	}
	out := renewalView{RestartOrder: restartOrder, Trust: trustLines(controlPlaneTrust), ClusterCA: CertPath(pki.ClusterCA)}
	for _, name := range pki.Renewable() {
		out.Identities = append(out.Identities, renewableIdentity{Name: name, KeyPath: KeyPath(name),
			CertPath: CertPath(name), Kubeconfig: embeddedIn[name], Component: readerOf[name]})
	}
	return out
}

// renewalPart installs the daily renewal: its timer, service and script.
func renewalPart(v *view) []fileSpec {
	return renewalFiles(v, "exk8s-renew-control-plane-certificates.sh")
}

// renewalFiles are the renewal's timer and service, and its script
// rendered from the role's template script: a worker's renews what it holds.
func renewalFiles(v *view, script string) []fileSpec {
	return []fileSpec{
		tmpl(RenewalTimer, "exk8s-renew-certificates.timer", modePublic, v),
		tmpl(unitDir+"/exk8s-renew-certificates.service", "exk8s-renew-certificates.service", modePublic, v),
		tmpl(RenewalScript, script, modeScript, v),
	}
}
