package bundle

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/pki"
)

// KubeconfigInput is an admin kubeconfig handed out outside a bundle: the
// operator's, in the answer of POST /clusters and of
// POST /clusters/{id}/kubeconfig. Its cluster entry, user and context are
// named after the cluster (AdminUser, AdminContext).
type KubeconfigInput struct {
	ClusterName string
	Server      string // e.g. https://<control-plane DNS name>:6443
	CAPEM       []byte
	Identity    pki.KeyPair
}

// Kubeconfig renders k with the bundle's own kubeconfig template, so the
// operator's file and the nodes' files never drift apart.
func (r *Renderer) Kubeconfig(k KubeconfigInput) (string, error) {
	out, err := r.execute("kubeconfig", kubeconfigView{
		ClusterName: k.ClusterName, Server: k.Server,
		User: AdminUser(k.ClusterName), Context: AdminContext(k.ClusterName),
		CAPEM: k.CAPEM, CertPEM: k.Identity.CertPEM, KeyPEM: k.Identity.KeyPEM,
	})
	if err != nil {
		return "", fmt.Errorf("rendering kubeconfig: %w", err)
	}
	return out, nil
}
