package progress

import (
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// NodeStatus is one node's bootstrap as GET /clusters shows it: where it
// stands, how long each step it passed took and which one runs now.
type NodeStatus struct {
	VMID      int64              `json:"vm_id"`
	NodeName  string             `json:"node_name"`
	Phase     clusterfacts.Phase `json:"phase"`
	Message   string             `json:"message"`
	UpdatedAt time.Time          `json:"updated_at"`
	Steps     []Step             `json:"steps"`
	Running   *Running           `json:"running"`
}

// StatusOf is a node's status with its steps and running step from its
// timeline.
func StatusOf(vmID int64, name, message string, t Timeline) NodeStatus {
	return NodeStatus{VMID: vmID, NodeName: name, Phase: t.Phase, Message: message, UpdatedAt: t.UpdatedAt,
		Steps: t.Steps(), Running: t.Running()}
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
