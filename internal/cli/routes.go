package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// The API's operator routes, one method each.

func clusterPath(id int64) string { return fmt.Sprintf("/clusters/%d", id) }

// CreateCluster founds a cluster (201) or hands its founding over (202,
// when only the cluster view comes back).
func (c *Client) CreateCluster(ctx context.Context, body any, idempotencyKey string) (*response, error) {
	return c.do(ctx, request{Method: http.MethodPost, Path: "/clusters", Body: body,
		Headers: map[string]string{"Idempotency-Key": idempotencyKey}})
}

// ListClusters reads one page of the org's clusters.
func (c *Client) ListClusters(ctx context.Context, query url.Values) (apitypes.ClusterList, *response, error) {
	var l apitypes.ClusterList
	path := "/clusters"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	res, err := c.getJSON(ctx, path, &l)
	return l, res, err
}

// GetCluster reads one cluster.
func (c *Client) GetCluster(ctx context.Context, id int64) (apitypes.ClusterView, *response, error) {
	var cl apitypes.ClusterView
	res, err := c.getJSON(ctx, clusterPath(id), &cl)
	return cl, res, err
}

// DeleteCluster deletes a cluster and returns it as it is now.
func (c *Client) DeleteCluster(ctx context.Context, id int64) (apitypes.ClusterView, *response, error) {
	var cl apitypes.ClusterView
	res, err := c.call(ctx, request{Method: http.MethodDelete, Path: clusterPath(id)}, &cl)
	return cl, res, err
}

// NodeBootstrap reads a node's bootstrap, window and fetches.
func (c *Client) NodeBootstrap(ctx context.Context, id, vmID int64) (apitypes.NodeBootstrapDetail, *response, error) {
	var d apitypes.NodeBootstrapDetail
	res, err := c.getJSON(ctx, fmt.Sprintf("%s/nodes/%d/bootstrap", clusterPath(id), vmID), &d)
	return d, res, err
}

// Rebootstrap re-opens a node's bootstrap.
func (c *Client) Rebootstrap(ctx context.Context, id, vmID int64) (apitypes.NodeBootstrapDetail, *response, error) {
	var d apitypes.NodeBootstrapDetail
	path := fmt.Sprintf("%s/nodes/%d/rebootstrap", clusterPath(id), vmID)
	res, err := c.call(ctx, request{Method: http.MethodPost, Path: path}, &d)
	return d, res, err
}

// ReplaceNode asks for the replacement of a control-plane node (202).
func (c *Client) ReplaceNode(ctx context.Context, id, vmID int64) (apitypes.NodeReplacement, *response, error) {
	var r apitypes.NodeReplacement
	path := fmt.Sprintf("%s/nodes/%d/replace", clusterPath(id), vmID)
	res, err := c.call(ctx, request{Method: http.MethodPost, Path: path}, &r)
	return r, res, err
}

// IssueKubeconfig mints an admin kubeconfig; ttl "" takes the API's default.
func (c *Client) IssueKubeconfig(ctx context.Context, id int64, ttl string) (apitypes.IssuedKubeconfig, *response, error) {
	var k apitypes.IssuedKubeconfig
	req := request{Method: http.MethodPost, Path: clusterPath(id) + "/kubeconfig"}
	if ttl != "" {
		req.Body = map[string]string{"ttl": ttl}
	}
	res, err := c.call(ctx, req, &k)
	return k, res, err
}

// Events lists a cluster's audit trail, newest first.
func (c *Client) Events(ctx context.Context, id int64) ([]apitypes.AuditEvent, error) {
	var l struct {
		Events []apitypes.AuditEvent `json:"events"`
	}
	_, err := c.getJSON(ctx, clusterPath(id)+"/events", &l)
	return l.Events, err
}

// Kubeconfigs lists the kubeconfigs issued for a cluster, newest first.
func (c *Client) Kubeconfigs(ctx context.Context, id int64) ([]apitypes.KubeconfigIssue, error) {
	var l struct {
		Kubeconfigs []apitypes.KubeconfigIssue `json:"kubeconfigs"`
	}
	_, err := c.getJSON(ctx, clusterPath(id)+"/kubeconfigs", &l)
	return l.Kubeconfigs, err
}

// TakeEtcdSnapshot asks for an etcd snapshot of a cluster now (202).
func (c *Client) TakeEtcdSnapshot(ctx context.Context, id int64) (apitypes.EtcdSnapshot, *response, error) {
	var s apitypes.EtcdSnapshot
	res, err := c.call(ctx, request{Method: http.MethodPost, Path: clusterPath(id) + "/etcd-snapshots"}, &s)
	return s, res, err
}

// EtcdSnapshots lists a cluster's etcd snapshots, newest first.
func (c *Client) EtcdSnapshots(ctx context.Context, id int64) ([]apitypes.EtcdSnapshot, *response, error) {
	var l struct {
		Snapshots []apitypes.EtcdSnapshot `json:"snapshots"`
	}
	res, err := c.getJSON(ctx, clusterPath(id)+"/etcd-snapshots", &l)
	return l.Snapshots, res, err
}

func poolsPath(id int64, name ...string) string {
	p := clusterPath(id) + "/node-pools"
	for _, n := range name {
		p += "/" + url.PathEscape(n)
	}
	return p
}

// CreatePool adds a worker pool to a cluster.
func (c *Client) CreatePool(ctx context.Context, id int64, body any, idempotencyKey string) (apitypes.NodePool, *response, error) {
	var p apitypes.NodePool
	res, err := c.call(ctx, request{Method: http.MethodPost, Path: poolsPath(id), Body: body,
		Headers: map[string]string{"Idempotency-Key": idempotencyKey}}, &p)
	return p, res, err
}

// ListPools reads a cluster's pools.
func (c *Client) ListPools(ctx context.Context, id int64) ([]apitypes.NodePool, *response, error) {
	var l struct {
		NodePools []apitypes.NodePool `json:"node_pools"`
	}
	res, err := c.getJSON(ctx, poolsPath(id), &l)
	return l.NodePools, res, err
}

// GetPool reads one pool.
func (c *Client) GetPool(ctx context.Context, id int64, name string) (apitypes.NodePool, *response, error) {
	var p apitypes.NodePool
	res, err := c.getJSON(ctx, poolsPath(id, name), &p)
	return p, res, err
}

// ScalePool changes a pool's count.
func (c *Client) ScalePool(ctx context.Context, id int64, name string, count int) (apitypes.NodePool, *response, error) {
	var p apitypes.NodePool
	res, err := c.call(ctx, request{Method: http.MethodPatch, Path: poolsPath(id, name), Body: map[string]int{"count": count}}, &p)
	return p, res, err
}

// DeletePool removes a pool and its workers.
func (c *Client) DeletePool(ctx context.Context, id int64, name string) (apitypes.NodePool, *response, error) {
	var p apitypes.NodePool
	res, err := c.call(ctx, request{Method: http.MethodDelete, Path: poolsPath(id, name)}, &p)
	return p, res, err
}

// KeepSpec keeps a cluster file as the cluster's spec.
func (c *Client) KeepSpec(ctx context.Context, id int64, f apitypes.ClusterFile) (apitypes.ClusterView, *response, error) {
	var v apitypes.ClusterView
	res, err := c.call(ctx, request{Method: http.MethodPut, Path: clusterPath(id) + "/spec", Body: f}, &v)
	return v, res, err
}

// SetRemediation sets the remediation settings body gives (200: the
// cluster).
func (c *Client) SetRemediation(ctx context.Context, id int64, body map[string]any) (apitypes.ClusterView, *response, error) {
	var v apitypes.ClusterView
	res, err := c.call(ctx, request{Method: http.MethodPatch, Path: clusterPath(id), Body: body}, &v)
	return v, res, err
}

// ScaleControlPlane asks for count control-plane nodes (202: recorded).
func (c *Client) ScaleControlPlane(ctx context.Context, id int64, count int) (apitypes.ControlPlaneScaling, *response, error) {
	var g apitypes.ControlPlaneScaling
	res, err := c.call(ctx, request{Method: http.MethodPatch, Path: clusterPath(id), Body: map[string]int{"control_plane_count": count}}, &g)
	return g, res, err
}
