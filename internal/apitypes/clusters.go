package apitypes

import "time"

// ClusterView is a cluster as GET /clusters shows it: no keys, no
// kubeconfig.
type ClusterView struct {
	ID                  int64      `json:"cluster_id"`
	Name                string     `json:"name"`
	Status              string     `json:"status"`
	StatusReason        string     `json:"status_reason,omitempty"` // Conditions' message, for older clients
	ControlPlaneDNSName string     `json:"control_plane_dns_name"`
	ControlPlaneVMIDs   []int64    `json:"control_plane_vm_ids"`
	ControlPlaneCount   int        `json:"control_plane_count"` // asked for: the founding's or a scaling's; a failed scaling's, what it kept
	Nodes               []NodeView `json:"nodes"`
	ServiceCIDR         string     `json:"service_cidr"`
	PodCIDR             string     `json:"pod_cidr"`
	CNI                 string     `json:"cni"`
	KubernetesVersion   string     `json:"kubernetes_version"`
	KeyAlgorithm        string     `json:"key_algorithm"`
	DNSConfigured       bool       `json:"dns_configured"`
	DNSError            string     `json:"dns_error,omitempty"`
	// DNSRecords are the records the control-plane name needs (one A
	// record per control-plane node): what founding asked the DNS API for,
	// and what to create by hand when DNSConfigured is false.
	DNSRecords []DNSRecord `json:"dns_records"`
	// EndpointVMID is the VM of the node the name points at (the platform
	// DNS API holds one value per name; a CA rotation moves it off each
	// node it restarts); 0, absent: no node has an address yet.
	EndpointVMID int64 `json:"endpoint_vm_id,omitempty"`
	// RestoredFromSnapshotID is the etcd snapshot the cluster was founded
	// from; null for a cluster founded empty.
	RestoredFromSnapshotID *int64 `json:"restored_from_snapshot_id"`
	// Bootstrap is how far the nodes' bootstrap got, as the VMs report it.
	Bootstrap Bootstrap `json:"bootstrap"`
	// CertificatesExpireAt is the earliest NotAfter among the nodes' stored
	// certificates (null before any is stored); renewal moves it.
	CertificatesExpireAt *time.Time `json:"certificates_expire_at"`
	// CAsExpireAt is each CA's NotAfter, by cert-table name; renewal never
	// moves them.
	CAsExpireAt map[string]time.Time `json:"cas_expire_at"`
	// CARoots are the cluster's roots of trust with their generations;
	// CARotation its latest CA rotation (null if none), with the phase
	// each node applied.
	CARoots    []CARootView `json:"ca_roots"`
	CARotation *CARotation  `json:"ca_rotation"`
	// NodePools are the cluster's live worker pools, each with its workers.
	NodePools []NodePool `json:"node_pools"`
	// Replacements are the cluster's newest control-plane node
	// replacements (the one in progress, how the last ones ended), newest
	// first; GET /clusters/{id} only (a list leaves them out).
	Replacements []NodeReplacement `json:"replacements,omitempty"`
	// Spec is the cluster file last applied (k8sapi apply, PUT
	// /clusters/{id}/spec): what the operator asks for; null when none was.
	Spec *ClusterFile `json:"spec"`
	// Actual is the cluster as it is, in a cluster file's shape (its
	// founding, its control plane, its live pools, its snapshot schedule):
	// what apply plans against and what a spec-less cluster's file is.
	Actual *ClusterFile `json:"actual"`
	// UnhealthyAfter ("5m0s"; "0s": off) and MaxUnhealthyPercent are the
	// cluster's remediation settings (docs/NODE-HEALTH.md).
	UnhealthyAfter      string `json:"unhealthy_after"`
	MaxUnhealthyPercent int    `json:"max_unhealthy_percent"`
	// Conditions are Ready (the cluster active) and Progressing (its
	// founding or deletion runs).
	Conditions []Condition `json:"conditions"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
}

// ClusterList is one page of GET /clusters; NextCursor is nil on the last.
type ClusterList struct {
	Clusters   []ClusterView `json:"clusters"`
	NextCursor *string       `json:"next_cursor"`
}

// FoundingResult is the 201 body of POST /clusters (a 202 is a
// ClusterView).
type FoundingResult struct {
	ClusterID             int64       `json:"cluster_id"`
	Name                  string      `json:"name"`
	Status                string      `json:"status"`
	Kubeconfig            string      `json:"kubeconfig"`
	ControlPlaneVMIDs     []int64     `json:"control_plane_vm_ids"`
	ControlPlaneDNSName   string      `json:"control_plane_dns_name"`
	ServiceCIDR           string      `json:"service_cidr"`
	PodCIDR               string      `json:"pod_cidr"`
	CNI                   string      `json:"cni"`
	KubernetesVersion     string      `json:"kubernetes_version"`
	KeyAlgorithm          string      `json:"key_algorithm"`
	DNSConfigured         bool        `json:"dns_configured"`
	DNSError              string      `json:"dns_error,omitempty"`
	BootstrapPathTemplate string      `json:"bootstrap_path_template"`
	IngressWildcardDNS    string      `json:"ingress_wildcard_dns_name"`
	SuggestedDNSRecords   []DNSRecord `json:"suggested_dns_records"`
}

// DNSRecord is a DNS record the operator (or the DNS API) should create:
// in a founding's answer and in every control-plane bundle.
type DNSRecord struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Value string `json:"value"`
	TTL   int    `json:"ttl"`
}
