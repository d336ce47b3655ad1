package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// A cluster argument is its id or its name: the name of the cluster file
// applied to it (unique among the org's live clusters, the server holds
// it so), or k8sapi's own name of it (exk8s-ORG-ID).

// clusterID is the cluster arg names: an id as it is, a name looked up
// among the org's clusters.
func clusterID(ctx context.Context, c *Client, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		if id < 1 {
			return 0, usageErrorf("cluster id %q is not a positive integer", arg)
		}
		return id, nil
	}
	cl, err := findNamed(ctx, c, arg)
	if err != nil {
		return 0, err
	}
	if cl == nil {
		return 0, fmt.Errorf("no cluster is named %q (k8sapi get clusters lists the org's)", arg)
	}
	return cl.ID, nil
}

// findNamed is the org's cluster (not deleted) named name, nil when none is.
func findNamed(ctx context.Context, c *Client, name string) (*apitypes.ClusterView, error) {
	clusters, _, err := listClusters(ctx, c, "", 0)
	if err != nil {
		return nil, err
	}
	for _, cl := range clusters {
		if cl.Name == name || cl.Spec != nil && cl.Spec.Name == name {
			return &cl, nil
		}
	}
	return nil, nil
}
