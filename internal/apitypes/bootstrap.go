package apitypes

import "time"

// Bootstrap is a cluster's bootstrap as GET /clusters shows it: one state
// over its control-plane nodes, and each node's.
type Bootstrap struct {
	State string          `json:"state"`
	Nodes []NodeBootstrap `json:"nodes"`
}

// NodeBootstrap is one node's bootstrap as GET /clusters shows it: where
// it stands, how long each step it passed took and which one runs now.
type NodeBootstrap struct {
	VMID      int64           `json:"vm_id"`
	NodeName  string          `json:"node_name"`
	Phase     string          `json:"phase"`
	Message   string          `json:"message"`
	UpdatedAt time.Time       `json:"updated_at"`
	Steps     []BootstrapStep `json:"steps"`
	Running   *RunningStep    `json:"running"`
}

// BootstrapStep is the work of a node's bootstrap that ended in Phase
// (a milestone the VM reports), and how long it took.
type BootstrapStep struct {
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Seconds   float64   `json:"seconds"`
}

// RunningStep is the step a node works on now: toward Phase, since
// StartedAt.
type RunningStep struct {
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
}

// NodeBootstrapDetail is one node's bootstrap as its operator sees it:
// GET /clusters/{id}/nodes/{vm_id}/bootstrap and the answer of
// rebootstrap.
type NodeBootstrapDetail struct {
	ClusterID int64           `json:"cluster_id"`
	VMID      int64           `json:"vm_id"`
	NodeName  string          `json:"node_name"`
	Phase     string          `json:"phase"`
	Message   string          `json:"message"`
	UpdatedAt time.Time       `json:"updated_at"`
	Window    BootstrapWindow `json:"window"`
	Fetches   []Fetch         `json:"fetches"`
}

// BootstrapWindow is a node's bootstrap window: when it opened, when it
// closes, and whether the node's bundle may be fetched now.
type BootstrapWindow struct {
	OpenedAt time.Time `json:"opened_at"`
	ClosesAt time.Time `json:"closes_at"`
	Open     bool      `json:"open"`
}

// Fetch is one recorded bundle fetch of a node, served or refused.
type Fetch struct {
	VMID      int64     `json:"vm_id"`
	RequestID string    `json:"request_id"`
	Outcome   string    `json:"outcome"`
	FetchedAt time.Time `json:"fetched_at"`
}
