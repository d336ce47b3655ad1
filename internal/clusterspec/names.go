package clusterspec

import (
	"encoding/json"
	"fmt"

	"github.com/excloud/k8sapi/internal/store"
)

// Naming rules of the seed, in one place.

// ClusterName is a cluster's name: its org and its id in hex.
func ClusterName(orgID, clusterID int64) string { return fmt.Sprintf("exk8s-%d-%x", orgID, clusterID) }

// NodeName is a control-plane node's: its ordinal in the cluster.
func NodeName(ordinal int, clusterID int64) string {
	return fmt.Sprintf("cp-%d.cluster-%d.internal", ordinal, clusterID)
}

// WorkerName is a worker's: its pool's name and its ordinal in the cluster.
func WorkerName(pool string, ordinal int, clusterID int64) string {
	return fmt.Sprintf("%s-%d.cluster-%d.internal", pool, ordinal, clusterID)
}

// Of is the validated request cluster c was founded from (its VMs are
// created from it).
func Of(c *store.Cluster) (Spec, error) {
	var spec Spec
	if err := json.Unmarshal(c.FoundingSpec, &spec); err != nil {
		return spec, fmt.Errorf("reading the founding spec of cluster %d: %w", c.ID, err)
	}
	return spec, nil
}
