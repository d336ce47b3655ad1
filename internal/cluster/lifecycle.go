package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/paging"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// replay returns the founding an idempotency key already committed, with a
// freshly minted admin kubeconfig for org's operator, recorded like every
// other (the first one was never stored: it holds a private key).
// store.ErrNotFound means the key is unused.
func (s *Service) replay(ctx context.Context, org auth.Principal, key string, spec clusterspec.Spec) (*Result, error) {
	c, err := s.Store.ClusterByIdempotencyKey(ctx, org.OrgID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	if c.RequestFingerprint == nil || *c.RequestFingerprint != spec.Fingerprint() {
		return nil, apperr.IdempotencyKeyReused.New()
	}
	if c.Status == store.StatusFounding {
		return nil, foundingInProgress()
	}
	if c.Status != store.StatusActive {
		msg := "the cluster founded under this Idempotency-Key is " + c.Status
		if c.StatusReason != "" {
			msg += " (" + c.StatusReason + ")"
		}
		return nil, apperr.ClusterNotActive.Detail(msg)
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	trust, err := keyring.OpenCA(ctx, s.Envelope, &c, pki.ClusterCA)
	if err != nil {
		return nil, s.TrustError(ctx, &c, err)
	}
	admin, err := s.kubeconfigs().IssueAdmin(ctx, org, trust, &c, adminkubeconfig.DefaultKubeconfigTTL)
	if err != nil {
		return nil, err
	}
	nodes = controlplane.ControlPlaneOf(nodes)
	res := resultOf(viewOf(c, store.Members{Nodes: nodes}), nodes, admin.Kubeconfig)
	res.Replayed = true
	return res, nil
}

// ListQuery asks for a page of an org's clusters.
type ListQuery struct {
	Status string // "" is every status but deleted
	Cursor string // a page's NextCursor; "" is the first page
	Limit  int    // at least 1
}

// storeQuery is q checked and decoded, asking the store for one cluster
// more than q's limit: whether a next page exists.
func (q ListQuery) storeQuery() (store.ClusterQuery, error) {
	sq := store.ClusterQuery{Status: q.Status, Limit: q.Limit + 1}
	if q.Status != "" && !slices.Contains(store.ClusterStatuses, q.Status) {
		return sq, apperr.InvalidQuery.Detail("status: must be one of " + strings.Join(store.ClusterStatuses, ", "))
	}
	var err error
	sq.BeforeID, err = paging.After(q.Cursor)
	return sq, err
}

// List returns the page of org's clusters q selects (q.Limit of them at
// most, newest first), and a cursor to the next page if there is one.
func (s *Service) List(ctx context.Context, org auth.Principal, q ListQuery) (apitypes.ClusterList, error) {
	sq, err := q.storeQuery()
	if err != nil {
		return apitypes.ClusterList{}, err
	}
	cs, err := s.Store.ListClusters(ctx, org.OrgID, sq)
	if err != nil {
		return apitypes.ClusterList{}, usecase.DatabaseError(err)
	}
	var page apitypes.ClusterList
	cs, page.NextCursor = paging.Cut(cs, q.Limit, func(c store.Cluster) int64 { return c.ID })
	page.Clusters, err = s.views(ctx, cs)
	return page, err
}

// views are the clusters with their nodes and pools, read in one round trip.
func (s *Service) views(ctx context.Context, cs []store.Cluster) ([]apitypes.ClusterView, error) {
	ids := make([]int64, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	m, err := s.Store.MembersOf(ctx, ids)
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	nodes := runsByCluster(m.Nodes, func(n *store.Node) int64 { return n.ClusterID })
	pools := runsByCluster(m.Pools, func(p *store.Pool) int64 { return p.ClusterID })
	views := make([]apitypes.ClusterView, 0, len(cs))
	for _, c := range cs {
		views = append(views, s.healthView(c, store.Members{Nodes: nodes[c.ID], Pools: pools[c.ID]}))
	}
	return views, nil
}

// runsByCluster is items by cluster, each cluster's rows a sub-slice of
// items: the store reads a listing's rows ordered by cluster, and copying
// each of a page's 300 node rows into its cluster's slice by appends was a
// large share of the page's allocations. Each run's capacity ends with it,
// so an append to one never writes over the next; a cluster met twice
// (never, in the store's order) has its second run appended to a copy.
func runsByCluster[T any](items []T, clusterOf func(*T) int64) map[int64][]T {
	out := map[int64][]T{}
	for start := 0; start < len(items); {
		id := clusterOf(&items[start])
		end := start + 1
		for end < len(items) && clusterOf(&items[end]) == id {
			end++
		}
		run := items[start:end:end]
		if prev, seen := out[id]; seen {
			run = append(prev, run...)
		}
		out[id] = run
		start = end
	}
	return out
}

// Get returns one of org's clusters; another org's is not found.
func (s *Service) Get(ctx context.Context, org auth.Principal, id int64) (apitypes.ClusterView, error) {
	sh, err := s.Store.ShowCluster(ctx, org.OrgID, id, recentReplacements)
	if errors.Is(err, store.ErrNotFound) {
		return apitypes.ClusterView{}, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return apitypes.ClusterView{}, usecase.DatabaseError(err)
	}
	v := s.healthView(sh.Cluster, sh.Members)
	v.Replacements = controlplane.ReplacementViews(sh.Replacements)
	return v, nil
}

// recentReplacements is how many replacements GET /clusters/{id} shows:
// the one in progress and enough ended ones to see a pattern.
const recentReplacements = 5

// load reads one of org's clusters, its nodes (workers too) and its live
// pools.
func (s *Service) load(ctx context.Context, org auth.Principal, id int64) (store.Cluster, store.Members, error) {
	c, err := s.Store.Cluster(ctx, org.OrgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, store.Members{}, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return c, store.Members{}, usecase.DatabaseError(err)
	}
	m, err := s.Store.MembersOf(ctx, []int64{c.ID})
	if err != nil {
		return c, m, usecase.DatabaseError(err)
	}
	return c, m, nil
}

// Delete removes the cluster's VMs, its security group (if founding made
// it) and its DNS record, then destroys its key material. It is safe to
// retry: a failure leaves the cluster deleting with the reason visible in
// GET, and the reconciler (or a second call) carries on; deleting a deleted
// cluster returns it unchanged. A cluster being founded cannot be deleted
// until its founding ends.
func (s *Service) Delete(ctx context.Context, org auth.Principal, bearer string, id int64) (apitypes.ClusterView, error) {
	c, m, err := s.load(ctx, org, id)
	if err != nil {
		return apitypes.ClusterView{}, err
	}
	if c.Status == store.StatusDeleted {
		return viewOf(c, m), nil
	}
	lease := s.RequestLease()
	if err := s.Store.BeginDeleting(ctx, org.OrgID, id, lease, s.Clock()); err != nil {
		return apitypes.ClusterView{}, s.deletionRefused(ctx, c, err)
	}
	ctx = platformauth.WithToken(ctx, bearer)
	if err := s.finishDeleting(ctx, &c, m.Nodes, lease.Owner); err != nil {
		return apitypes.ClusterView{}, usecase.GoesOn(err, deletionGoesOn(id))
	}
	return s.Get(ctx, org, id)
}

// deletionGoesOn is what a deletion stopped part-way answers: the cluster
// is recorded deleting before the first VM is deleted, so the reconciler
// finishes it whatever stopped this request.
func deletionGoesOn(id int64) string {
	return fmt.Sprintf("the deletion of cluster %d goes on without this request: the reconciler retries it every minute "+
		"until every VM is gone; poll GET /clusters/%d (DELETE again is safe)", id, id)
}

// finishDeleting tears the cluster down and ends it deleted; on failure it
// lets go of the cluster with the reason, for the reconciler to retry.
func (s *Service) finishDeleting(ctx context.Context, c *store.Cluster, nodes []store.Node, owner string) error {
	err := s.teardown(ctx, c, nodes)
	if err != nil {
		retry := store.Released{Status: store.StatusDeleting, Until: s.Clock(), Reason: "deleting failed, retried every minute: " + usecase.Reason(err)}
		if rerr := s.Store.Release(context.WithoutCancel(ctx), c.ID, owner, retry); rerr != nil {
			s.Logger().ErrorContext(ctx, "recording a failed deletion failed", "cluster_id", c.ID, "cause", rerr.Error())
		}
		return err
	}
	// A founding that was undone by deleting keeps saying why it failed.
	if err := s.Store.EndOperation(ctx, c.ID, owner, store.StatusDeleted, keptReason(c)); err != nil {
		return usecase.Recorded(err)
	}
	return nil
}

func keptReason(c *store.Cluster) string {
	if c.Status == store.StatusDeleting && !strings.HasPrefix(c.StatusReason, "deleting failed") {
		return c.StatusReason
	}
	return ""
}

// deletionRefused answers a delete that could not take the cluster over:
// a replacement, a control-plane scaling or an unpaused upgrade in
// progress, or busyOr.
func (s *Service) deletionRefused(ctx context.Context, c store.Cluster, err error) error {
	if !errors.Is(err, store.ErrLeaseLost) {
		return usecase.DatabaseError(err)
	}
	if r, lerr := s.Store.LiveReplacement(ctx, c.ID); lerr == nil {
		return controlplane.ReplacementInProgress(c.ID, r)
	}
	if g, lerr := s.Store.LiveScaling(ctx, c.ID); lerr == nil {
		return controlplane.ScalingInProgress(c.ID, g)
	}
	if u, uerr := s.Store.LiveUpgrade(ctx, c.ID); uerr == nil && u.State != store.UpgradePaused {
		return apperr.UpgradeInProgress.Detailf("upgrade %d to %s is %s; delete the cluster once it is done, or paused (GET /clusters/%d/upgrade)",
			u.ID, u.ToVersion, u.State, c.ID)
	}
	return busyOr(c.Status, err)
}

// busyOr answers a delete that could not take the cluster over: another
// invocation drives its founding, its deletion or an operation of one of
// its node pools.
func busyOr(status string, err error) error {
	if !errors.Is(err, store.ErrLeaseLost) {
		return usecase.DatabaseError(err)
	}
	switch status {
	case store.StatusFounding:
		return foundingInProgress()
	case store.StatusActive: // no deletion began: a pool operation holds its lease
		return apperr.NodePoolBusy.Detail("a node pool operation of the cluster is running; delete the cluster once it settles")
	}
	return apperr.DeletionInProgress.New()
}
