package bundle

import (
	"path"
	"strings"

	"github.com/excloud/k8sapi/internal/pki"
)

// A CA rotation changes a node's trust files (docs/CA-ROTATION.md): each
// is a bundle of every generation of its root still trusted. A renewal
// during a rotation answers them beside the certificates, and the
// renewal script writes the changed ones, rewrites every kubeconfig's
// certificate-authority-data when the cluster CA's changed, and restarts
// exactly their readers (trustFiles).

// ServiceAccountPubPath and ServiceAccountKeyPath are the signer's public
// keys (every trusted generation: the API server verifies tokens against
// each) and its current key.
var (
	ServiceAccountPubPath = path.Join(pkiDir, "service-account.pem")
	ServiceAccountKeyPath = path.Join(pkiDir, "service-account-key.pem")
)

// trustFile is one trust file: where it is, its mode, and the components
// that read it (a kubeconfig's readers for the cluster CA, whose bundle
// every kubeconfig embeds).
type trustFile struct {
	Path    string
	Mode    string
	Readers []string
}

// controlPlaneTrust is the one table of a control-plane node's trust
// files and who reads each: the API server (--client-ca-file,
// --kubelet-certificate-authority, --etcd-cafile,
// --requestheader-client-ca-file, --service-account-key-file,
// --service-account-signing-key-file), the controller manager
// (--root-ca-file, which kube-root-ca.crt carries, --client-ca-file,
// --requestheader-client-ca-file, --service-account-private-key-file),
// etcd (--trusted-ca-file, --peer-trusted-ca-file), the kubelet
// (clientCAFile), and every kubeconfig's certificate-authority-data.
var controlPlaneTrust = []trustFile{
	{CertPath(pki.ClusterCA), "0644", []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", ControlPlaneTaintUnit}},
	{CertPath(pki.EtcdCA), "0644", []string{"kube-apiserver", "etcd"}},
	// The etcd CRL follows its CA's generations: etcd's restart installs
	// it (ExecStartPre), once it verifies against the etcd-ca.pem above.
	{EtcdCRLBundlePath, "0644", []string{"etcd"}},
	{CertPath(pki.FrontProxyCA), "0644", []string{"kube-apiserver", "kube-controller-manager"}},
	{ServiceAccountPubPath, "0644", []string{"kube-apiserver"}},
	{ServiceAccountKeyPath, "0600", []string{"kube-apiserver", "kube-controller-manager"}},
}

// workerTrust is a worker's: the cluster CA (clientCAFile and its
// kubelet's kubeconfig).
var workerTrust = []trustFile{{CertPath(pki.ClusterCA), "0644", []string{"kubelet"}}}

// trustLines are the trust table as the renewal scripts read it: path,
// mode and the readers joined by commas.
func trustLines(files []trustFile) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Path+" "+f.Mode+" "+strings.Join(f.Readers, ","))
	}
	return out
}

// ControlPlaneTrust is what a control-plane node's renewal answers during
// a rotation: its trust files by path. The signer's key is answered only
// while the rotation rotates it (signerKey non-nil): the one private key
// a renewal ever carries, to a node that proved it holds its own keys,
// which already holds the signer it replaces. The etcd CRL (crlPEM) is
// answered once the cluster has one stored: signed by the etcd CA's
// current generation from a rotation's signing on.
func ControlPlaneTrust(cas map[pki.Name][]byte, saPub, signerKey, crlPEM []byte) map[string]string {
	out := map[string]string{
		CertPath(pki.ClusterCA):    string(cas[pki.ClusterCA]),
		CertPath(pki.EtcdCA):       string(cas[pki.EtcdCA]),
		CertPath(pki.FrontProxyCA): string(cas[pki.FrontProxyCA]),
		ServiceAccountPubPath:      string(saPub),
	}
	if signerKey != nil {
		out[ServiceAccountKeyPath] = string(signerKey)
	}
	if crlPEM != nil {
		out[EtcdCRLBundlePath] = string(crlPEM)
	}
	return out
}

// WorkerTrust is what a worker's renewal answers during a rotation.
func WorkerTrust(ca []byte) map[string]string {
	return map[string]string{CertPath(pki.ClusterCA): string(ca)}
}
