package cluster

import (
	"testing"

	"github.com/excloud/k8sapi/internal/store"
)

// A listing's rows come ordered by cluster; each cluster's run is its
// rows, an append to one run never writes over the next, and a cluster
// met twice keeps both its runs.
func TestRunsByCluster(t *testing.T) {
	nodes := []store.Node{{ClusterID: 1, VMID: 11}, {ClusterID: 1, VMID: 12}, {ClusterID: 2, VMID: 21}, {ClusterID: 1, VMID: 13}}
	runs := runsByCluster(nodes, func(n *store.Node) int64 { return n.ClusterID })
	if len(runs[1]) != 3 || runs[1][2].VMID != 13 || len(runs[2]) != 1 || runs[2][0].VMID != 21 {
		t.Fatalf("runs %v", runs)
	}
	first := runsByCluster(nodes[:3], func(n *store.Node) int64 { return n.ClusterID })
	grown := append(first[1], store.Node{VMID: 99})
	if nodes[2].VMID != 21 || grown[2].VMID != 99 {
		t.Errorf("an append to cluster 1's run wrote over cluster 2's row: %d", nodes[2].VMID)
	}
}
