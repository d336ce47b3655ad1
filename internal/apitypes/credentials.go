package apitypes

import "time"

// CredentialRequest is the body of POST /clusters/{id}/credentials: a
// certificate request made on the operator's machine over a key that
// never leaves it (`k8sapi credential`, a kubeconfig's exec plugin).
type CredentialRequest struct {
	CSR string `json:"csr"` // one PEM CERTIFICATE REQUEST
}

// IssuedCredential is the 201 body of POST /clusters/{id}/credentials:
// a short-lived client certificate over the request's key, and what a
// kubeconfig needs to reach the cluster with it.
type IssuedCredential struct {
	ClusterID int64  `json:"cluster_id"`
	Name      string `json:"name"`
	// Server is the cluster's API endpoint, https://<control-plane DNS name>:6443.
	Server string `json:"server"`
	// CertificateAuthority is the cluster CA (PEM), which Server's
	// certificate chains to and which signed Certificate.
	CertificateAuthority string `json:"certificate_authority"`
	Certificate          string `json:"certificate"` // PEM
	// User and Groups are whom Certificate names: chosen by k8sapi (who
	// asked, and k8sapi's cluster-admins group), never by the request.
	User      string    `json:"user"`
	Groups    []string  `json:"groups"`
	Serial    string    `json:"serial"`
	ExpiresAt time.Time `json:"expires_at"`
}
