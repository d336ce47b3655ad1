package carotation

import (
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/store"
)

// ViewOf is rotation r of cluster clusterID as the API shows it, with the
// phase each of nodes last applied of it (nil nodes: none shown).
func ViewOf(clusterID int64, r *store.Rotation, nodes []store.Node) apitypes.CARotation {
	v := apitypes.CARotation{ID: r.ID, ClusterID: clusterID, Phase: r.Phase, State: r.State, Reason: r.Reason,
		Message: r.Message, DistrustWaitSeconds: r.DistrustWaitSeconds, SigningBeganAt: r.SigningBeganAt,
		CreatedAt: r.CreatedAt, EndedAt: r.EndedAt, Roots: []string{}, Nodes: []apitypes.CARotationNodeView{}}
	for _, id := range r.Roots {
		v.Roots = append(v.Roots, rootName(id))
	}
	if at := r.DistrustAfter(); !at.IsZero() {
		v.DistrustAfter = &at
	}
	for _, n := range counted(nodes) {
		nv := apitypes.CARotationNodeView{Name: n.Name, Role: n.Role}
		if n.CAPhase.RotationID == r.ID {
			nv.AppliedPhase, nv.AppliedAt = n.CAPhase.Phase, n.CAPhase.AppliedAt
		}
		v.Nodes = append(v.Nodes, nv)
	}
	return v
}

// RootsOf are c's roots with their generations, in the roots' table order.
func RootsOf(c *store.Cluster) []apitypes.CARootView {
	out := make([]apitypes.CARootView, 0, len(keyring.Roots))
	for _, r := range keyring.Roots {
		v := apitypes.CARootView{Root: r.Name, Generations: []apitypes.CAGenerationView{}}
		for _, g := range keyring.Generations(c, r.ID) {
			v.Generations = append(v.Generations, apitypes.CAGenerationView{Generation: g.Generation, State: g.State, NotAfter: g.NotAfter})
		}
		out = append(out, v)
	}
	return out
}

// counted are the nodes a rotation waits for: every node with a VM that
// is not being removed, control plane and workers.
func counted(nodes []store.Node) []store.Node {
	var out []store.Node
	for _, n := range nodes {
		if n.VMID != 0 && !n.Retiring {
			out = append(out, n)
		}
	}
	return out
}
