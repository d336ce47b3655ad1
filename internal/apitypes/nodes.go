package apitypes

import "time"

// NodeView is one node's VM as the API shows it: a control-plane node of
// a cluster, or a pool's worker (WorkerView).
type NodeView struct {
	VMID       int64  `json:"vm_id"`
	Ordinal    int    `json:"ordinal"`
	Name       string `json:"name"`
	IPv4       string `json:"ipv4"`
	IPv6       string `json:"ipv6,omitempty"`
	PublicIPv4 string `json:"public_ipv4,omitempty"`
	// Retiring: the node is being replaced (its VM is deleted once the
	// node replacing it is ready).
	Retiring bool `json:"retiring,omitempty"`
}

// WorkerView is one worker whose VM exists: its bootstrap phase, and
// whether it is being removed. Its Retiring is always shown (it shadows
// NodeView's, which a control-plane node omits when false).
type WorkerView struct {
	NodeView
	Phase    string `json:"phase"`
	Retiring bool   `json:"retiring"`
}

// NodeReplacement is a control-plane node's replacement as
// POST /clusters/{id}/nodes/{vm_id}/replace answers it: the node
// replaced, the node replacing it and how far it is.
type NodeReplacement struct {
	ID          int64  `json:"replacement_id"`
	ClusterID   int64  `json:"cluster_id"`
	OldVMID     int64  `json:"old_vm_id"`
	OldNodeName string `json:"old_node_name"`
	NewNodeName string `json:"new_node_name"`
	State       string `json:"state"`
	StateReason string `json:"state_reason,omitempty"` // Conditions' message, for older clients
	// Conditions are Ready (the replacement done) and Progressing (it
	// runs, or is being turned back).
	Conditions []Condition `json:"conditions"`
	CreatedAt  time.Time   `json:"created_at"`
}
