package progress

import (
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// NodeStatus is one node's bootstrap as GET /clusters shows it.
type NodeStatus struct {
	VMID      int64              `json:"vm_id"`
	NodeName  string             `json:"node_name"`
	Phase     clusterfacts.Phase `json:"phase"`
	Message   string             `json:"message"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// Bootstrap is a cluster's bootstrap as GET /clusters shows it.
type Bootstrap struct {
	State State        `json:"state"`
	Nodes []NodeStatus `json:"nodes"`
}

// BootstrapOf is the cluster's bootstrap from its nodes' (in ordinal order).
func BootstrapOf(nodes []NodeStatus) Bootstrap {
	phases := make([]clusterfacts.Phase, len(nodes))
	for i, n := range nodes {
		phases[i] = n.Phase
	}
	if nodes == nil {
		nodes = []NodeStatus{}
	}
	return Bootstrap{State: ClusterState(phases), Nodes: nodes}
}
