package founding

import (
	"context"
	"errors"

	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// claimPool claims one pool whose operation's lease ran out (its driver
// died, or let go of it out of time or after a failed undo) and finishes
// it; false when there is none. A pool operation is always finished, never
// undone for its driver's death: its caller holds nothing only the answer
// carried (no key, no kubeconfig), as a machine set's controller converges
// on the replicas asked for.
func (r *Reconciler) claimPool(ctx context.Context, rep *Report) (bool, error) {
	s := r.Service
	lease := s.newLease(r.Lease, DefaultReconcileLease)
	p, err := s.Store.ClaimExpiredPool(ctx, lease, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = r.reconcilePool(r.actingFor(ctx, p.OrgID), p, lease, rep)
	if err != nil {
		s.logger().WarnContext(ctx, "reconciling a node pool: the operation goes on at the next run", "node_pool_id", p.ID, "cause", err.Error())
		rep.Retrying++
	}
	return true, nil
}

// reconcilePool drives the pool's operation to its end, or turns it back
// when a step fails. A pool whose cluster is no longer active ends deleted:
// the cluster's deletion removes every worker's VM with the rest.
func (r *Reconciler) reconcilePool(ctx context.Context, p store.Pool, lease store.Lease, rep *Report) error {
	s := r.Service
	c, err := s.Store.Cluster(ctx, p.OrgID, p.ClusterID)
	if err != nil {
		return err
	}
	if c.Status != store.StatusActive {
		if err = s.Store.SettlePool(ctx, p.ID, lease.Owner, store.PoolDeleted, "the cluster is "+c.Status, nil); err == nil {
			rep.PoolsSettled++
		}
		return err
	}
	op, err := s.loadPoolOperation(ctx, c, p, lease)
	if err != nil {
		return err
	}
	res := engine.Drive(ctx, s.driver(r.RetryAfter), s.poolKind(), op, r.deadline(ctx))
	return tally{done: &rep.PoolsSettled, undone: &rep.PoolsTurnedBack}.count(res)
}
