package clusterfacts

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// FromRows is the one conversion of a cluster's stored rows into its facts:
// the stored spellings of its algorithm and CNI are parsed here, once, and
// a row holding neither a known algorithm nor a known CNI is an error
// rather than a value every later reader must doubt.
func FromRows(c *store.Cluster, nodes []store.Node) (Cluster, []Node, error) {
	alg, err := pki.ParseAlgorithm(c.KeyAlgorithm)
	if err != nil {
		return Cluster{}, nil, fmt.Errorf("cluster %d's key algorithm: %w", c.ID, err)
	}
	cni, err := ParseCNI(c.CNI)
	if err != nil {
		return Cluster{}, nil, fmt.Errorf("cluster %d's CNI: %w", c.ID, err)
	}
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		out[i] = NodeOf(n)
	}
	return Cluster{OrgID: c.OrgID, ID: c.ID, Name: c.Name, ControlPlaneDNSName: c.ControlPlaneDNSName,
		KubernetesVersion: c.KubernetesVersion, ClusterDomain: c.ClusterDomain,
		ServiceCIDR: c.ServiceCIDR, PodCIDR: c.PodCIDR, CNI: cni, Algorithm: alg,
		Restored: c.RestoredFromSnapshotID != nil}, out, nil
}

// NodeOf is a kube_nodes row's facts, for a reader that needs no more of
// the cluster than its nodes (FromRows converts a cluster's whole rows).
func NodeOf(n store.Node) Node {
	return Node{VMID: n.VMID, Ordinal: n.Ordinal, Name: n.Name, IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4,
		Retiring: n.Retiring, Joins: n.ReplacementID != 0 || n.ScalingID != 0}
}

// RoleOf is the role of a node stored with role: a worker, or a
// control-plane node.
func RoleOf(role string) Role {
	if role == store.RoleWorker {
		return Worker
	}
	return ControlPlane
}
