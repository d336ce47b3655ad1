package founding

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
)

// replay returns the founding an idempotency key already committed, with a
// freshly minted admin kubeconfig (the first one was never stored: it holds
// a private key). store.ErrNotFound means the key is unused.
func (s *Service) replay(ctx context.Context, org auth.Principal, key string, spec Spec) (*Result, error) {
	c, err := s.Store.ClusterByIdempotencyKey(ctx, org.OrgID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, databaseError(err)
	}
	if c.RequestFingerprint == nil || *c.RequestFingerprint != spec.Fingerprint() {
		return nil, apperr.New(apperr.Conflict, "idempotency_key_reused",
			"Idempotency-Key was already used with a different request body")
	}
	if c.Status != store.StatusActive {
		return nil, apperr.New(apperr.Conflict, "cluster_not_active",
			"the cluster founded under this Idempotency-Key is "+c.Status)
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return nil, databaseError(err)
	}
	opened, err := keyring.Open(ctx, s.Envelope, &c)
	if err != nil {
		return nil, keyring.OpenError(ctx, s.logger(), &c, 0, err)
	}
	kubeconfig, err := s.adminKubeconfig(opened.Trust, &c)
	if err != nil {
		return nil, err
	}
	res := resultOf(viewOf(c, nodes), nodes, kubeconfig)
	res.Replayed = true
	return res, nil
}

// List returns org's clusters that are not deleted.
func (s *Service) List(ctx context.Context, org auth.Principal) ([]ClusterView, error) {
	cs, err := s.Store.ListClusters(ctx, org.OrgID)
	if err != nil {
		return nil, databaseError(err)
	}
	ids := make([]int64, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	nodes, err := s.Store.NodesOfClusters(ctx, ids)
	if err != nil {
		return nil, databaseError(err)
	}
	byCluster := map[int64][]store.Node{}
	for _, n := range nodes {
		byCluster[n.ClusterID] = append(byCluster[n.ClusterID], n)
	}
	views := make([]ClusterView, 0, len(cs))
	for _, c := range cs {
		views = append(views, viewOf(c, byCluster[c.ID]))
	}
	return views, nil
}

// Get returns one of org's clusters; another org's is not found.
func (s *Service) Get(ctx context.Context, org auth.Principal, id int64) (ClusterView, error) {
	c, nodes, err := s.load(ctx, org, id)
	if err != nil {
		return ClusterView{}, err
	}
	return viewOf(c, nodes), nil
}

// load reads one of org's clusters and its nodes.
func (s *Service) load(ctx context.Context, org auth.Principal, id int64) (store.Cluster, []store.Node, error) {
	c, err := s.Store.Cluster(ctx, org.OrgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, nil, apperr.New(apperr.NotFound, "not_found", "no such cluster")
	}
	if err != nil {
		return c, nil, databaseError(err)
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return c, nil, databaseError(err)
	}
	return c, nodes, nil
}

// Delete removes the cluster's VMs, its security group (if founding made
// it) and its DNS record, then destroys its key material. It is safe to
// retry: a failure leaves the cluster "deleting" and a second call carries
// on; deleting a deleted cluster returns it unchanged.
func (s *Service) Delete(ctx context.Context, org auth.Principal, bearer string, id int64) (ClusterView, error) {
	c, nodes, err := s.load(ctx, org, id)
	if err != nil {
		return ClusterView{}, err
	}
	if c.Status == store.StatusDeleted {
		return viewOf(c, nodes), nil
	}
	ctx = platformauth.WithToken(ctx, bearer)
	if err := s.Store.SetStatus(ctx, id, store.StatusDeleting); err != nil {
		return ClusterView{}, databaseError(err)
	}
	for _, n := range nodes {
		if err := s.Compute.DeleteInstance(ctx, n.VMID); err != nil {
			return ClusterView{}, computeError("deleting a control-plane VM", err)
		}
	}
	if c.CreatedSecurityGroupID != nil {
		if err := s.Compute.DeleteSecurityGroup(ctx, *c.CreatedSecurityGroupID); err != nil && !compute.IsNotFound(err) {
			return ClusterView{}, computeError("deleting the security group", err)
		}
	}
	if err := s.DNS.DeleteA(ctx, s.Settings.BaseDNSDomain, c.ControlPlaneDNSName); err != nil {
		// The record points at addresses that no longer exist; report, go on.
		s.logger().WarnContext(ctx, "deleting dns record failed", "cluster_id", id, "cause", err.Error())
	}
	if err := s.Store.DestroyKeys(ctx, id); err != nil {
		return ClusterView{}, databaseError(err)
	}
	return s.Get(ctx, org, id)
}
