package bundle

import "github.com/excloud/k8sapi/internal/pki"

// Renewal unit and script, installed with every bundle and started once the
// node is ready (exk8s-bootstrap-control-plane.sh).
const (
	RenewalScript = binDir + "/exk8s-renew-certificates.sh"
	RenewalTimer  = unitDir + "/exk8s-renew-certificates.timer"
)

// renewalView is what the renewal script needs to know about the files a
// renewal serves.
type renewalView struct {
	StoredCerts []string // the stored identities' certificates: they change only when renewed
	Readers     []reader
}

// reader says which component reads a credential file, so a renewal
// restarts exactly the components whose files changed.
type reader struct{ Path, Component string }

// credentialReaders is the one table of who reads which credential a
// renewal may change. CA certificates and the service-account key never
// change in a renewal; the admin kubeconfig is read by no component.
func credentialReaders() []reader {
	var out []reader
	add := func(component string, paths ...string) {
		for _, p := range paths {
			out = append(out, reader{Path: p, Component: component})
		}
	}
	add("etcd", keyPair(pki.EtcdPeer)...)
	add("kube-apiserver", keyPair(pki.APIServer, pki.APIServerEtcdClient, pki.APIServerKubeletClient, pki.FrontProxyClient)...)
	add("kubelet", append(keyPair(pki.KubeletServing), KubeconfigPath("kubelet"))...)
	add("kube-controller-manager", KubeconfigPath("controller-manager"))
	add("kube-scheduler", KubeconfigPath("scheduler"))
	add("kube-proxy", KubeconfigPath("kube-proxy"))
	return out
}

func keyPair(names ...pki.Name) []string {
	var out []string
	for _, n := range names {
		out = append(out, CertPath(n), KeyPath(n))
	}
	return out
}

func newRenewalView() renewalView {
	v := renewalView{Readers: credentialReaders()}
	for _, name := range pki.Names(pki.PhaseFounding) {
		v.StoredCerts = append(v.StoredCerts, CertPath(name))
	}
	return v
}

// renewalPart installs the daily renewal: its timer, service and script.
func renewalPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(RenewalTimer, "exk8s-renew-certificates.timer", modePublic, v),
		tmpl(unitDir+"/exk8s-renew-certificates.service", "exk8s-renew-certificates.service", modePublic, v),
		tmpl(RenewalScript, "exk8s-renew-certificates.sh", modeScript, v),
	}
}
