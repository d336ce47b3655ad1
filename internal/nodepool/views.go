package nodepool

import (
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterspec"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// Views are pools with their workers among nodes.
func Views(pools []store.Pool, nodes []store.Node) []apitypes.NodePool {
	out := make([]apitypes.NodePool, 0, len(pools))
	for _, p := range pools {
		out = append(out, poolViewOf(p, nodes))
	}
	return out
}

// poolViewOf is p with its workers among nodes (an intended worker shows
// once its VM exists).
func poolViewOf(p store.Pool, nodes []store.Node) apitypes.NodePool {
	v := apitypes.NodePool{Name: p.Name, Count: p.Count, InstanceType: p.InstanceType, ImageID: p.ImageID, SubnetID: p.SubnetID,
		Labels: p.Labels, Taints: clusterspec.TaintsOf(p.Taints), State: p.State, StateReason: p.StateReason, Nodes: []apitypes.WorkerView{},
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		Conditions: engine.Conditions(engine.Observed{State: p.State, ReadyIn: store.PoolActive, Message: p.StateReason,
			Op: p.LastOp, CreatedAt: p.CreatedAt})}
	for _, n := range nodes {
		if n.PoolID == p.ID && n.VMID != 0 {
			v.Nodes = append(v.Nodes, apitypes.WorkerView{NodeView: NodeViewOf(n), Phase: n.Phase, Retiring: n.Retiring})
		}
	}
	return v
}

// NodeViewOf is node n as the API shows it, whatever its role: its VM,
// names, addresses and the Kubernetes version it runs (a control-plane
// view adds whether it is retiring).
func NodeViewOf(n store.Node) apitypes.NodeView {
	return apitypes.NodeView{VMID: n.VMID, Ordinal: n.Ordinal, Name: n.Name, IPv4: n.IPv4, IPv6: n.IPv6,
		PublicIPv4: n.PublicIPv4, KubernetesVersion: n.KubernetesVersion}
}
