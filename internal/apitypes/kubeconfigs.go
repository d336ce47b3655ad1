package apitypes

import "time"

// IssuedKubeconfig is the 201 body of POST /clusters/{id}/kubeconfig.
type IssuedKubeconfig struct {
	ClusterID  int64  `json:"cluster_id"`
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	// User and Context are the kubeconfig's user and context (its cluster
	// entry is Name).
	User      string    `json:"user"`
	Context   string    `json:"context"`
	Serial    string    `json:"serial"`
	ExpiresAt time.Time `json:"expires_at"`
}

// KubeconfigIssue is one recorded issue of an admin kubeconfig: what names
// its certificate, who asked and when; never the certificate or its key.
type KubeconfigIssue struct {
	Serial    string    `json:"serial"` // the certificate's serial number, lower-case hex
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"` // the certificate's NotAfter
	IssuedBy  string    `json:"issued_by"`
	RequestID string    `json:"request_id"`
}

// KubeconfigIssueList is GET /clusters/{id}/kubeconfigs, newest first.
type KubeconfigIssueList struct {
	Kubeconfigs []KubeconfigIssue `json:"kubeconfigs"`
}
