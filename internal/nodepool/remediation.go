package nodepool

import (
	"context"
	"errors"
	"fmt"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterspec"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// ReplaceWorker replaces old, an unhealthy worker of active cluster c (the
// reconciler's remediation, docs/NODE-HEALTH.md), as a pool operation
// like a scale: in one transaction the pool goes to scaling with its
// count unchanged and its node-pool operation begins in the table of
// operations under lease, old is marked retiring and a new worker is
// intended with the next of the cluster's names (a name is never handed
// on); then the operation is driven as far as pass allows: the new VM,
// its addresses, old's VM deleted and its row removed, the pool settled.
// What is left the reconciler's pool kind finishes. The pool busy or not
// active: 409 node_pool_busy, nothing begun.
func (s *Service) ReplaceWorker(ctx context.Context, c store.Cluster, old store.Node, lease store.Lease, pass usecase.Pass) (engine.Result, error) {
	p, err := s.Store.PoolByID(ctx, old.PoolID)
	if err != nil {
		return engine.Result{}, usecase.DatabaseError(err)
	}
	p, err = s.Store.BeginWorkerReplacement(ctx, store.WorkerReplacement{OrgID: c.OrgID, Pool: p, Old: old, Lease: lease, Now: s.Clock(),
		Name: func(ordinal int) string { return clusterspec.WorkerName(p.Name, ordinal, c.ID) }})
	if err != nil {
		return engine.Result{}, workerReplacementRefused(p, old, err)
	}
	op, err := s.loadPoolOperation(ctx, c, p, lease)
	if err != nil {
		return engine.Result{}, err
	}
	return engine.Drive(ctx, s.Driver(pass.RetryAfter), s.poolKind(), op, pass.Deadline), nil
}

// workerReplacementRefused maps a replacement that could not begin to its
// answer.
func workerReplacementRefused(p store.Pool, old store.Node, err error) error {
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		return apperr.NodePoolBusy.Detailf("node pool %q is %s", p.Name, p.State)
	case errors.Is(err, store.ErrClusterNotActive):
		return apperr.ClusterNotActive.New()
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound.Detail(fmt.Sprintf("worker %s is gone or already being removed", old.Name))
	}
	return usecase.DatabaseError(err)
}
