package progress

import (
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// StatusOf is a node's bootstrap as GET /clusters shows it: where it
// stands, with its steps and running step from its timeline.
func StatusOf(vmID int64, name, message string, t Timeline) apitypes.NodeBootstrap {
	return apitypes.NodeBootstrap{VMID: vmID, NodeName: name, Phase: string(t.Phase), Message: message, UpdatedAt: t.UpdatedAt,
		Steps: t.Steps(), Running: t.Running()}
}

// BootstrapOf is the cluster's bootstrap from its nodes' (in ordinal order).
func BootstrapOf(nodes []apitypes.NodeBootstrap) apitypes.Bootstrap {
	phases := make([]clusterfacts.Phase, len(nodes))
	for i, n := range nodes {
		phases[i] = clusterfacts.Phase(n.Phase)
	}
	if nodes == nil {
		nodes = []apitypes.NodeBootstrap{}
	}
	return apitypes.Bootstrap{State: string(ClusterState(phases)), Nodes: nodes}
}
