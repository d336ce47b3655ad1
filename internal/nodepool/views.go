package nodepool

import (
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/store"
)

// PoolView is a node pool as the API shows it, with its workers.
type PoolView struct {
	Name         string            `json:"name"`
	Count        int               `json:"count"`
	InstanceType string            `json:"instance_type"`
	ImageID      int64             `json:"image_id"`
	SubnetID     int64             `json:"subnet_id"`
	Labels       map[string]string `json:"labels"`
	Taints       []store.Taint     `json:"taints"`
	State        string            `json:"state"`
	StateReason  string            `json:"state_reason,omitempty"`
	Nodes        []WorkerView      `json:"nodes"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
}

// WorkerView is one worker whose VM exists: its bootstrap phase, and
// whether it is being removed.
type WorkerView struct {
	apitypes.NodeView
	Phase    string `json:"phase"`
	Retiring bool   `json:"retiring"`
}

// Views are pools with their workers among nodes.
func Views(pools []store.Pool, nodes []store.Node) []PoolView {
	out := make([]PoolView, 0, len(pools))
	for _, p := range pools {
		out = append(out, poolViewOf(p, nodes))
	}
	return out
}

// poolViewOf is p with its workers among nodes (an intended worker shows
// once its VM exists).
func poolViewOf(p store.Pool, nodes []store.Node) PoolView {
	v := PoolView{Name: p.Name, Count: p.Count, InstanceType: p.InstanceType, ImageID: p.ImageID, SubnetID: p.SubnetID,
		Labels: p.Labels, Taints: p.Taints, State: p.State, StateReason: p.StateReason, Nodes: []WorkerView{},
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	for _, n := range nodes {
		if n.PoolID == p.ID && n.VMID != 0 {
			v.Nodes = append(v.Nodes, WorkerView{NodeView: apitypes.NodeView{VMID: n.VMID, Ordinal: n.Ordinal, Name: n.Name,
				IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4}, Phase: n.Phase, Retiring: n.Retiring})
		}
	}
	return v
}
