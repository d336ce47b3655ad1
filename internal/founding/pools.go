package founding

import (
	"context"
	"errors"
	"fmt"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
)

// PoolResult is the answer of a pool operation: the pool as it stands,
// whether an Idempotency-Key replayed an earlier create, and whether the
// operation goes on after the answer (the reconciler finishes it).
type PoolResult struct {
	Pool     PoolView
	Replayed bool
	Accepted bool
}

// CreatePool adds a worker pool to one of org's active clusters. bearer is
// the operator's token, passed on to the compute API. A key already used
// for this cluster answers the pool it created (a different body: 409).
func (s *Service) CreatePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, req PoolRequest, key string) (PoolResult, error) {
	spec, err := req.Validate()
	if err != nil {
		return PoolResult{}, err
	}
	c, err := s.activeCluster(ctx, org, clusterID)
	if err != nil {
		return PoolResult{}, err
	}
	fp := spec.Fingerprint() // as asked: the subnet resolved below is not part of it
	if key != "" {
		if res, err := s.replayPool(ctx, c.ID, key, fp); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	}
	ctx = platformauth.WithToken(ctx, bearer)
	if spec.SubnetID == 0 {
		if spec.SubnetID, err = clusterSubnet(&c); err != nil {
			return PoolResult{}, err
		}
	}
	// Reads, no side effect: a bad subnet, image or instance type is bad
	// input, and nothing is written for it.
	if err := s.checkPlatformRefs(ctx, poolRefs(spec)); err != nil {
		return PoolResult{}, err
	}
	op, err := s.beginPool(ctx, org.OrgID, c, newPool(c.ID, spec, key, fp), store.PoolCreating, nil)
	if errors.Is(err, store.ErrDuplicate) {
		return s.replayPool(ctx, c.ID, key, fp) // a concurrent request with the same key committed first
	}
	if err != nil {
		return PoolResult{}, err
	}
	return s.drivePool(ctx, op)
}

// clusterSubnet is the subnet the cluster's control plane was founded in.
func clusterSubnet(c *store.Cluster) (int64, error) {
	spec, err := specOf(c)
	return spec.SubnetID, err
}

func poolRefs(spec PoolSpec) platformRefs {
	return platformRefs{subnetID: spec.SubnetID, imageID: spec.ImageID, instanceType: spec.InstanceType,
		imageField: "image_id", instanceTypeField: "instance_type"}
}

// newPool is the row of a pool about to be created.
func newPool(clusterID int64, spec PoolSpec, key, fingerprint string) store.Pool {
	p := store.Pool{ClusterID: clusterID, Name: spec.Name, Count: spec.Count, InstanceType: spec.InstanceType,
		ImageID: spec.ImageID, SubnetID: spec.SubnetID, Labels: spec.Labels, Taints: spec.Taints}
	if key != "" {
		p.IdempotencyKey, p.RequestFingerprint = &key, &fingerprint
	}
	return p
}

// replayPool answers the pool a create under key made: store.ErrNotFound
// when the key is unused.
func (s *Service) replayPool(ctx context.Context, clusterID int64, key, fingerprint string) (PoolResult, error) {
	p, err := s.Store.PoolByIdempotencyKey(ctx, clusterID, key)
	if errors.Is(err, store.ErrNotFound) {
		return PoolResult{}, err
	}
	if err != nil {
		return PoolResult{}, databaseError(err)
	}
	if p.RequestFingerprint == nil || *p.RequestFingerprint != fingerprint {
		return PoolResult{}, apperr.IdempotencyKeyReused.Detail("Idempotency-Key was already used with a different node pool")
	}
	v, err := s.poolView(ctx, p)
	return PoolResult{Pool: v, Replayed: true}, err
}

// ScalePool changes an active pool's count: new workers are created, or
// the highest-numbered ones removed (their VMs deleted).
func (s *Service) ScalePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string, req ScaleRequest) (PoolResult, error) {
	count, err := req.Validate()
	if err != nil {
		return PoolResult{}, err
	}
	return s.changePool(ctx, org, bearer, clusterID, name, func(p *store.Pool) (string, []string) {
		p.Count = count
		return store.PoolScaling, []string{store.PoolActive}
	})
}

// DeletePool removes a pool: every worker's VM is deleted, then the pool
// ends deleted. A pool whose create failed has none.
func (s *Service) DeletePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string) (PoolResult, error) {
	return s.changePool(ctx, org, bearer, clusterID, name, func(p *store.Pool) (string, []string) {
		p.Count = 0
		return store.PoolDeleting, []string{store.PoolActive, store.PoolFailed}
	})
}

// changePool begins the operation change sets on org's pool (the state it
// goes to and the states it may leave) and drives it.
func (s *Service) changePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string,
	change func(*store.Pool) (to string, from []string)) (PoolResult, error) {
	c, err := s.activeCluster(ctx, org, clusterID)
	if err != nil {
		return PoolResult{}, err
	}
	p, err := s.poolNamed(ctx, c.ID, name)
	if err != nil {
		return PoolResult{}, err
	}
	to, from := change(&p)
	op, err := s.beginPool(platformauth.WithToken(ctx, bearer), org.OrgID, c, p, to, from)
	if errors.Is(err, store.ErrLeaseLost) {
		return PoolResult{}, apperr.NodePoolBusy.Detailf("node pool %q is %s; poll GET /clusters/%d/node-pools/%s", name, p.State, c.ID, name)
	}
	if err != nil {
		return PoolResult{}, err
	}
	return s.drivePool(platformauth.WithToken(ctx, bearer), op)
}

// beginPool commits the pool operation (leased to this request) with its
// intended or retiring workers, then loads them.
func (s *Service) beginPool(ctx context.Context, orgID int64, c store.Cluster, p store.Pool, to string, from []string) (*poolOperation, error) {
	lease := s.newLease(s.Settings.Lease, DefaultLease)
	p, err := s.Store.BeginPoolOperation(ctx, store.PoolChange{OrgID: orgID, Pool: p, State: to, From: from, Lease: lease,
		Now: s.now(), Name: func(ordinal int) string { return workerName(p.Name, ordinal, c.ID) }})
	switch {
	case errors.Is(err, store.ErrNameTaken):
		return nil, apperr.NodePoolExists.Detailf("name: the cluster already has a node pool %q", p.Name)
	case errors.Is(err, store.ErrClusterNotActive):
		return nil, apperr.ClusterNotActive.New()
	case errors.Is(err, store.ErrDuplicate), errors.Is(err, store.ErrLeaseLost):
		return nil, err
	case err != nil:
		return nil, databaseError(err)
	}
	return s.loadPoolOperation(ctx, c, p, lease)
}

func (s *Service) loadPoolOperation(ctx context.Context, c store.Cluster, p store.Pool, lease store.Lease) (*poolOperation, error) {
	nodes, err := s.Store.PoolNodes(ctx, p.ID)
	if err != nil {
		return nil, databaseError(err)
	}
	return newPoolOperation(c, p, nodes, lease), nil
}

// activeCluster is one of org's clusters, which must be active.
func (s *Service) activeCluster(ctx context.Context, org auth.Principal, id int64) (store.Cluster, error) {
	c, err := s.Store.Cluster(ctx, org.OrgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return c, databaseError(err)
	}
	if c.Status != store.StatusActive {
		return c, apperr.ClusterNotActive.Detail("the cluster is " + c.Status + "; its node pools and nodes change only while it is active")
	}
	return c, nil
}

// poolNamed is the cluster's live pool called name.
func (s *Service) poolNamed(ctx context.Context, clusterID int64, name string) (store.Pool, error) {
	p, err := s.Store.PoolByName(ctx, clusterID, name)
	if errors.Is(err, store.ErrNotFound) {
		return p, apperr.NotFound.Detailf("no node pool %q in this cluster", name)
	}
	if err != nil {
		return p, databaseError(err)
	}
	return p, nil
}

// Pools lists the live pools of one of org's clusters, with their workers.
func (s *Service) Pools(ctx context.Context, org auth.Principal, clusterID int64) ([]PoolView, error) {
	_, m, err := s.load(ctx, org, clusterID)
	if err != nil {
		return nil, err
	}
	return poolViews(m.Pools, m.Nodes), nil
}

// Pool is one live pool of one of org's clusters, with its workers.
func (s *Service) Pool(ctx context.Context, org auth.Principal, clusterID int64, name string) (PoolView, error) {
	c, err := s.Store.Cluster(ctx, org.OrgID, clusterID)
	if errors.Is(err, store.ErrNotFound) {
		return PoolView{}, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return PoolView{}, databaseError(err)
	}
	p, err := s.poolNamed(ctx, c.ID, name)
	if err != nil {
		return PoolView{}, err
	}
	return s.poolView(ctx, p)
}

// poolView is p with its workers.
func (s *Service) poolView(ctx context.Context, p store.Pool) (PoolView, error) {
	nodes, err := s.Store.PoolNodes(ctx, p.ID)
	if err != nil {
		return PoolView{}, databaseError(err)
	}
	return poolViewOf(p, nodes), nil
}

// createWorkerVM sends the create of worker n of pool p under the node's
// token (derived from its row's id, never reused, so a worker that
// replaces a removed one is never answered the removed one's VM). Its
// zone, key, volume and groups are the cluster's.
func (s *Service) createWorkerVM(ctx context.Context, c *store.Cluster, p store.Pool, n store.Node) (int64, error) {
	spec, err := specOf(c)
	if err != nil {
		return 0, err
	}
	return s.sendCreate(ctx, compute.Instance{
		Name: n.Name, ZoneID: spec.ZoneID, SubnetID: p.SubnetID, ImageID: p.ImageID, InstanceType: p.InstanceType,
		AllocatePublicIPv4: spec.AllocatePublicIPv4, SSHPubkey: spec.SSHPubkey,
		SecurityGroupIDs: c.SecurityGroupIDs, RootVolumeSizeGiB: spec.RootVolumeSizeGiB,
		Tags:             map[string]string{"role": "worker", "k8sapi/cluster": c.Name, "k8sapi/node-pool": p.Name},
		IdempotencyToken: tokenFor(c, fmt.Sprintf("worker-%d", n.ID)),
	}, fmt.Sprintf("worker VM %d of node pool %s", n.Ordinal, p.Name), bundle.UserdataInput{Worker: true})
}
