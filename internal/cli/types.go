package cli

import "time"

// The API's answers, as far as the CLI reads them (internal/apidocs/openapi.json
// is the contract). The CLI keeps its own types rather than importing the
// server's so it links none of the server's packages.

// Cluster is a ClusterView: GET /clusters/{id}, an item of GET /clusters.
type Cluster struct {
	ID                   int64             `json:"cluster_id"`
	Name                 string            `json:"name"`
	Status               string            `json:"status"`
	StatusReason         string            `json:"status_reason,omitempty"`
	ControlPlaneDNSName  string            `json:"control_plane_dns_name"`
	ControlPlaneVMIDs    []int64           `json:"control_plane_vm_ids"`
	Nodes                []Node            `json:"nodes"`
	ServiceCIDR          string            `json:"service_cidr"`
	PodCIDR              string            `json:"pod_cidr"`
	CNI                  string            `json:"cni"`
	KubernetesVersion    string            `json:"kubernetes_version"`
	KeyAlgorithm         string            `json:"key_algorithm"`
	DNSConfigured        bool              `json:"dns_configured"`
	DNSError             string            `json:"dns_error,omitempty"`
	Bootstrap            Bootstrap         `json:"bootstrap"`
	CreatedAt            time.Time         `json:"created_at"`
	UpdatedAt            time.Time         `json:"updated_at"`
	CertificatesExpireAt *time.Time        `json:"certificates_expire_at"`
	CAsExpireAt          map[string]string `json:"cas_expire_at"`
}

// Node is a NodeView: a control-plane VM of a cluster.
type Node struct {
	VMID       int64  `json:"vm_id"`
	Ordinal    int    `json:"ordinal"`
	Name       string `json:"name"`
	IPv4       string `json:"ipv4"`
	IPv6       string `json:"ipv6,omitempty"`
	PublicIPv4 string `json:"public_ipv4,omitempty"`
}

// Bootstrap is how far the nodes' bootstrap got.
type Bootstrap struct {
	State string          `json:"state"`
	Nodes []NodeBootstrap `json:"nodes"`
}

// NodeBootstrap is one node's phase, the steps it took to get there and
// the one it is on.
type NodeBootstrap struct {
	VMID      int64        `json:"vm_id"`
	NodeName  string       `json:"node_name"`
	Phase     string       `json:"phase"`
	Message   string       `json:"message"`
	UpdatedAt time.Time    `json:"updated_at"`
	Steps     []Step       `json:"steps,omitempty"`
	Running   *RunningStep `json:"running,omitempty"`
}

// Step is the work that ended in Phase, and how long it took.
type Step struct {
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Seconds   float64   `json:"seconds"`
}

// RunningStep is the step a node works on now: toward Phase.
type RunningStep struct {
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
}

// ClusterList is GET /clusters; NextCursor is set by servers that page.
type ClusterList struct {
	Clusters   []Cluster `json:"clusters"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// FoundingResult is the 201 of POST /clusters.
type FoundingResult struct {
	ID                  int64   `json:"cluster_id"`
	Name                string  `json:"name"`
	Status              string  `json:"status"`
	Kubeconfig          string  `json:"kubeconfig"`
	ControlPlaneVMIDs   []int64 `json:"control_plane_vm_ids"`
	ControlPlaneDNSName string  `json:"control_plane_dns_name"`
	DNSConfigured       bool    `json:"dns_configured"`
	DNSError            string  `json:"dns_error,omitempty"`
}

// NodeBootstrapDetail is GET /clusters/{id}/nodes/{vm_id}/bootstrap and
// the answer of rebootstrap.
type NodeBootstrapDetail struct {
	ClusterID int64     `json:"cluster_id"`
	VMID      int64     `json:"vm_id"`
	NodeName  string    `json:"node_name"`
	Phase     string    `json:"phase"`
	Message   string    `json:"message"`
	UpdatedAt time.Time `json:"updated_at"`
	Window    struct {
		OpenedAt time.Time `json:"opened_at"`
		ClosesAt time.Time `json:"closes_at"`
		Open     bool      `json:"open"`
	} `json:"window"`
	Fetches []Fetch `json:"fetches"`
}

// NodeReplacement is the answer of POST /clusters/{id}/nodes/{vm_id}/replace.
type NodeReplacement struct {
	ID          int64  `json:"replacement_id"`
	ClusterID   int64  `json:"cluster_id"`
	OldVMID     int64  `json:"old_vm_id"`
	OldNodeName string `json:"old_node_name"`
	NewNodeName string `json:"new_node_name"`
	State       string `json:"state"`
}

// Fetch is one bundle fetch of a node.
type Fetch struct {
	RequestID string    `json:"request_id"`
	Outcome   string    `json:"outcome"`
	FetchedAt time.Time `json:"fetched_at"`
}

// IssuedKubeconfig is the 201 of POST /clusters/{id}/kubeconfig.
type IssuedKubeconfig struct {
	ClusterID  int64     `json:"cluster_id"`
	Name       string    `json:"name"`
	Kubeconfig string    `json:"kubeconfig"`
	User       string    `json:"user"`
	Context    string    `json:"context"`
	Serial     string    `json:"serial"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// AuditEvent is an item of GET /clusters/{id}/events.
type AuditEvent struct {
	At        time.Time `json:"at"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Resource  string    `json:"resource"`
	Outcome   string    `json:"outcome"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
}

// KubeconfigRecord is an item of GET /clusters/{id}/kubeconfigs.
type KubeconfigRecord struct {
	Serial    string    `json:"serial"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	IssuedBy  string    `json:"issued_by"`
	RequestID string    `json:"request_id"`
}

// EtcdSnapshot is one item of GET /clusters/{id}/etcd-snapshots (and the
// answer of POST).
type EtcdSnapshot struct {
	ID          int64      `json:"id"`
	ClusterID   int64      `json:"cluster_id"`
	Trigger     string     `json:"trigger"`
	RequestedBy string     `json:"requested_by"`
	NodeVMID    int64      `json:"node_vm_id"`
	ObjectKey   string     `json:"object_key"`
	State       string     `json:"state"`
	SizeBytes   *int64     `json:"size_bytes"`
	SHA256      *string    `json:"sha256"`
	Failure     *string    `json:"failure"`
	RequestedAt time.Time  `json:"requested_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

// NodePool is a NodePool: a cluster's worker pool with its workers.
type NodePool struct {
	Name         string            `json:"name"`
	Count        int               `json:"count"`
	InstanceType string            `json:"instance_type"`
	ImageID      int64             `json:"image_id"`
	SubnetID     int64             `json:"subnet_id"`
	Labels       map[string]string `json:"labels"`
	Taints       []Taint           `json:"taints"`
	State        string            `json:"state"`
	StateReason  string            `json:"state_reason,omitempty"`
	Nodes        []Worker          `json:"nodes"`
	CreatedAt    time.Time         `json:"created_at"`
}

// Taint is one taint of a pool's Nodes.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Worker is a WorkerView: a worker VM of a pool.
type Worker struct {
	Node
	Phase    string `json:"phase"`
	Retiring bool   `json:"retiring"`
}
