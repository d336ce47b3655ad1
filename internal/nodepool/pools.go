package nodepool

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// Service creates, scales, deletes and shows the worker pools of an org's
// clusters.
type Service struct{ *usecase.Deps }

func (s *Service) vms() vm.Maker { return vm.Maker{Deps: s.Deps} }

// PoolResult is the answer of a pool operation: the pool as it stands,
// whether an Idempotency-Key replayed an earlier create, and whether the
// operation goes on after the answer (the reconciler finishes it).
type PoolResult struct {
	Pool     apitypes.NodePool
	Replayed bool
	Accepted bool
}

// CreatePool adds a worker pool to one of org's active clusters. bearer is
// the operator's token, passed on to the compute API. A key already used
// for this cluster answers the pool it created (a different body: 409).
func (s *Service) CreatePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, req clusterspec.PoolRequest, key string) (PoolResult, error) {
	spec, err := req.Validate()
	if err != nil {
		return PoolResult{}, err
	}
	c, err := s.ActiveCluster(ctx, org, clusterID, "its node pools and nodes change")
	if err != nil {
		return PoolResult{}, err
	}
	if err := poolsNetworked(c); err != nil {
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
	if err := s.vms().CheckRefs(ctx, poolRefs(spec)); err != nil {
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

// poolsNetworked refuses a pool on a cluster whose pod network would not
// reach its workers (bridge): they would join, but pods on them would be
// cut off from every other node's.
func poolsNetworked(c store.Cluster) error {
	cni, err := clusterfacts.ParseCNI(c.CNI)
	if err != nil {
		return apperr.Internal.Wrap(err)
	}
	if cni.RoutesJoiningNodes() {
		return nil
	}
	return apperr.PoolsNeedCNI.Detailf("cluster %d runs the %s pod network: every route is rendered from the nodes at founding, "+
		"so the nodes already running would have none to a worker; found a cluster with cni flannel or cilium for node pools", c.ID, cni)
}

// clusterSubnet is the subnet the cluster's control plane was founded in.
func clusterSubnet(c *store.Cluster) (int64, error) {
	spec, err := clusterspec.Of(c)
	return spec.SubnetID, err
}

func poolRefs(spec clusterspec.PoolSpec) vm.Refs {
	return vm.Refs{SubnetID: spec.SubnetID, ImageID: spec.ImageID, InstanceType: spec.InstanceType,
		ImageField: "image_id", InstanceTypeField: "instance_type"}
}

// newPool is the row of a pool about to be created.
func newPool(clusterID int64, spec clusterspec.PoolSpec, key, fingerprint string) store.Pool {
	p := store.Pool{ClusterID: clusterID, Name: spec.Name, Count: spec.Count, InstanceType: spec.InstanceType,
		ImageID: spec.ImageID, SubnetID: spec.SubnetID, Labels: spec.Labels, Taints: clusterspec.TaintRows(spec.Taints)}
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
		return PoolResult{}, usecase.DatabaseError(err)
	}
	if p.RequestFingerprint == nil || *p.RequestFingerprint != fingerprint {
		return PoolResult{}, apperr.IdempotencyKeyReused.Detail("Idempotency-Key was already used with a different node pool")
	}
	v, err := s.poolView(ctx, p)
	return PoolResult{Pool: v, Replayed: true}, err
}

// ScalePool changes an active pool's count: new workers are created, or
// the highest-numbered ones removed (their VMs deleted).
func (s *Service) ScalePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string, req clusterspec.ScaleRequest) (PoolResult, error) {
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
	c, err := s.ActiveCluster(ctx, org, clusterID, "its node pools and nodes change")
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
	lease := s.RequestLease()
	p, err := s.Store.BeginPoolOperation(ctx, store.PoolChange{OrgID: orgID, Pool: p, State: to, From: from, Lease: lease,
		Now: s.Clock(), Name: func(ordinal int) string { return clusterspec.WorkerName(p.Name, ordinal, c.ID) }, ByOperator: true})
	switch {
	case errors.Is(err, store.ErrUpgrading):
		return nil, apperr.UpgradeInProgress.Detailf("the cluster is being upgraded; change node pool %q once it is done or paused (GET /clusters/%d/upgrade)", p.Name, c.ID)
	case errors.Is(err, store.ErrNameTaken):
		return nil, apperr.NodePoolExists.Detailf("name: the cluster already has a node pool %q", p.Name)
	case errors.Is(err, store.ErrClusterNotActive):
		return nil, apperr.ClusterNotActive.New()
	case errors.Is(err, store.ErrDuplicate), errors.Is(err, store.ErrLeaseLost):
		return nil, err
	case err != nil:
		return nil, usecase.DatabaseError(err)
	}
	return s.loadPoolOperation(ctx, c, p, lease)
}

func (s *Service) loadPoolOperation(ctx context.Context, c store.Cluster, p store.Pool, lease store.Lease) (*poolOperation, error) {
	nodes, err := s.Store.PoolNodes(ctx, p.ID)
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	return newPoolOperation(c, p, nodes, lease), nil
}

// poolNamed is the cluster's live pool called name.
func (s *Service) poolNamed(ctx context.Context, clusterID int64, name string) (store.Pool, error) {
	p, err := s.Store.PoolByName(ctx, clusterID, name)
	if errors.Is(err, store.ErrNotFound) {
		return p, apperr.NotFound.Detailf("no node pool %q in this cluster", name)
	}
	if err != nil {
		return p, usecase.DatabaseError(err)
	}
	return p, nil
}

// Pools lists the live pools of one of org's clusters, with their workers.
func (s *Service) Pools(ctx context.Context, org auth.Principal, clusterID int64) ([]apitypes.NodePool, error) {
	c, err := s.OrgCluster(ctx, org, clusterID)
	if err != nil {
		return nil, err
	}
	m, err := s.Store.MembersOf(ctx, []int64{c.ID})
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	views := Views(m.Pools, m.Nodes)
	health := nodehealth.ByVM(m.Nodes, s.Clock())
	for i := range views {
		nodehealth.AnnotatePool(&views[i], health)
	}
	return views, nil
}

// Pool is one live pool of one of org's clusters, with its workers.
func (s *Service) Pool(ctx context.Context, org auth.Principal, clusterID int64, name string) (apitypes.NodePool, error) {
	c, err := s.OrgCluster(ctx, org, clusterID)
	if err != nil {
		return apitypes.NodePool{}, err
	}
	p, err := s.poolNamed(ctx, c.ID, name)
	if err != nil {
		return apitypes.NodePool{}, err
	}
	return s.poolView(ctx, p)
}

// poolView is p with its workers.
func (s *Service) poolView(ctx context.Context, p store.Pool) (apitypes.NodePool, error) {
	nodes, err := s.Store.PoolNodes(ctx, p.ID)
	if err != nil {
		return apitypes.NodePool{}, usecase.DatabaseError(err)
	}
	v := poolViewOf(p, nodes)
	nodehealth.AnnotatePool(&v, nodehealth.ByVM(nodes, s.Clock()))
	return v, nil
}
