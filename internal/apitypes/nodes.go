package apitypes

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
