package founding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// claimReplacement claims one cluster whose node replacement is in
// progress and free (never driven yet, or its last driver let go or died)
// and drives it; false when there is none. A replacement is always
// finished, or turned back when its new node cannot be made: its caller
// holds nothing the answer alone carried.
func (r *Reconciler) claimReplacement(ctx context.Context, rep *Report) (bool, error) {
	s := r.Service
	lease := s.newLease(r.Lease, DefaultReconcileLease)
	c, err := s.Store.ClaimExpiredReplacement(ctx, lease, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := r.reconcileReplacement(r.actingFor(ctx, c.OrgID), c, lease, rep); err != nil {
		s.logger().WarnContext(ctx, "reconciling a node replacement: it goes on at the next run", "cluster_id", c.ID, "cause", err.Error())
		rep.Retrying++
	}
	return true, nil
}

// reconcileReplacement drives claimed cluster c's replacement as far as it
// goes now, and lets go of the cluster where it stops.
func (r *Reconciler) reconcileReplacement(ctx context.Context, c store.Cluster, lease store.Lease, rep *Report) error {
	s := r.Service
	op, err := s.replacementFor(ctx, c, lease)
	if err == nil && op.row.State == store.ReplacementFailing {
		err = s.removeNewNode(ctx, op)
		count(rep, err, &rep.ReplacementsFailed)
	} else if err == nil {
		err = r.advanceReplacement(ctx, op, rep)
	}
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		r.letGo(ctx, c, lease, err)
		return err
	}
	return nil
}

// advanceReplacement runs the replacement's steps: done, waiting for the
// new node (looked at again at the next runs, until ReplaceWithin), or
// turned back when the new node could not be made.
func (r *Reconciler) advanceReplacement(ctx context.Context, op *replacement, rep *Report) error {
	s := r.Service
	if !op.newNode().Issued {
		if err := s.open(ctx, op.op); err != nil {
			return err
		}
	}
	err := runSteps(s, ctx, "node replacement", replacementSteps(), op, r.deadline(ctx))
	switch {
	case err == nil:
		rep.Replaced++
		return nil
	case errors.Is(err, errNotReady):
		return r.awaitOrGiveUp(ctx, op, rep)
	case errors.Is(err, errOutOfTime), errors.Is(err, store.ErrLeaseLost), op.newNode().Issued:
		return err // the old VM's deletion is retried, never turned back: the new member is in etcd
	}
	s.turnBackReplacement(ctx, op, err)
	rep.ReplacementsFailed++
	return nil
}

// awaitOrGiveUp lets go of a replacement whose new node is not ready yet,
// for the next run to look again; after ReplaceWithin it ends failed and
// keeps both nodes, as neither can be judged from here.
func (r *Reconciler) awaitOrGiveUp(ctx context.Context, op *replacement, rep *Report) error {
	s := r.Service
	within := orDefault(r.ReplaceWithin, DefaultReplaceWithin)
	if s.now().Sub(op.row.CreatedAt) <= within {
		rep.ReplacementsWaiting++
		return r.releaseActive(ctx, op.op, s.now().Add(orDefault(r.RetryAfter, DefaultRetryAfter)))
	}
	reason := fmt.Sprintf("the new node %s did not report ready within %s; both nodes are kept: see its bootstrap "+
		"(GET /clusters/%d/nodes/{vm_id}/bootstrap), re-open it or replace it", op.newNode().Name, within, op.row.ClusterID)
	end := store.ReplacementEnd{State: store.ReplacementFailed, Reason: reason, Keep: op.old.ID}
	if err := recorded(s.Store.EndReplacement(ctx, op.row.ClusterID, op.op.lease.Owner, op.row.ID, end)); err != nil {
		return err
	}
	rep.ReplacementsFailed++
	return nil
}

// turnBackReplacement records that the replacement is turned back (its new
// node could not be made), then removes the new node; a failure is left
// to the next run, which finds it failing.
func (s *Service) turnBackReplacement(ctx context.Context, op *replacement, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	reason := fmt.Sprintf("%s; the new node was removed and %s kept", reasonOf(cause), op.row.OldNodeName)
	err := s.Store.FailReplacement(ctx, op.row.ClusterID, op.op.lease.Owner, op.row.ID, reason)
	if err == nil {
		op.row.State, op.row.StateReason = store.ReplacementFailing, reason
		err = s.removeNewNode(ctx, op)
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "turning back a node replacement failed; the next run retries", "cluster_id", op.row.ClusterID, "cause", err.Error())
	}
}

// removeNewNode deletes the new node's VM (one whose create was sent but
// whose id was never recorded is found by repeating the create), then its
// row, keeps the old node and ends the replacement failed.
func (s *Service) removeNewNode(ctx context.Context, op *replacement) error {
	n := op.newNode()
	if err := s.deleteVM(ctx, &op.op.cluster, n); err != nil {
		return err
	}
	end := store.ReplacementEnd{State: store.ReplacementFailed, Reason: op.row.StateReason, Remove: n.ID, Keep: op.old.ID}
	return recorded(s.Store.EndReplacement(ctx, op.row.ClusterID, op.op.lease.Owner, op.row.ID, end))
}

// letGo releases a replacement whose run stopped: at once when it ran out
// of time, after RetryAfter when a step failed.
func (r *Reconciler) letGo(ctx context.Context, c store.Cluster, lease store.Lease, cause error) {
	until := r.Service.now().Add(orDefault(r.RetryAfter, DefaultRetryAfter))
	if errors.Is(cause, errOutOfTime) {
		until = r.Service.now()
	}
	if err := r.releaseActive(ctx, &operation{cluster: c, lease: lease}, until); err != nil {
		r.Service.logger().WarnContext(ctx, "releasing a node replacement failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}

// releaseActive lets go of op's cluster (active) until until.
func (r *Reconciler) releaseActive(ctx context.Context, op *operation, until time.Time) error {
	c := op.cluster
	return recorded(r.Service.Store.Release(context.WithoutCancel(ctx), c.ID, op.lease.Owner,
		store.Released{Status: store.StatusActive, Until: until, Reason: c.StatusReason}))
}
