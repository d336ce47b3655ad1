package founding

import (
	"context"
	"errors"
	"fmt"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// reconcileReplacement drives claimed cluster c's replacement as far as it
// goes now (a replacement is always finished, or turned back when its new
// node cannot be made: its caller holds nothing the answer alone carried).
// A replacement already turned back (failing) has its new node removed.
func (r *Reconciler) reconcileReplacement(ctx context.Context, c store.Cluster, lease store.Lease, rep *Report) error {
	s := r.Service
	op, err := s.replacementFor(ctx, c, lease, orDefault(r.ReplaceWithin, DefaultReplaceWithin))
	if err == nil && op.row.State == store.ReplacementFailing {
		if err = s.removeNewNode(ctx, op); err == nil {
			rep.ReplacementsFailed++
		}
	} else if err == nil {
		err = r.advanceReplacement(ctx, op, rep)
	}
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		r.letGo(ctx, c, lease)
		return err
	}
	return nil
}

// advanceReplacement opens the trust when the new node still needs its
// identities, then drives the replacement's steps: done, waiting for the
// new node (looked at again at the next runs, until ReplaceWithin), or
// undone (undoReplacement).
func (r *Reconciler) advanceReplacement(ctx context.Context, op *replacement, rep *Report) error {
	s := r.Service
	if !op.newNode().Issued {
		if err := s.open(ctx, op.op); err != nil {
			return err
		}
	}
	res := engine.Drive(ctx, s.driver(r.RetryAfter), r.replacementKind(), op, r.deadline(ctx))
	return tally{done: &rep.Replaced, undone: &rep.ReplacementsFailed, waiting: &rep.ReplacementsWaiting}.count(res)
}

// undoReplacement ends a replacement one of whose steps failed: one whose
// new node never reported ready in time ends failed keeping both nodes, as
// neither can be judged from here; one whose new node has its identities
// is not turned back (the new member is in etcd: the old VM's deletion is
// retried); any other is turned back, its new node removed.
func (r *Reconciler) undoReplacement(ctx context.Context, op *replacement, cause error) error {
	s := r.Service
	var late *notReadyInTime
	switch {
	case errors.As(cause, &late):
		end := store.ReplacementEnd{State: store.ReplacementFailed, Reason: late.Error(), Keep: op.old.ID}
		return recorded(s.Store.EndReplacement(ctx, op.row.ClusterID, op.op.lease.Owner, op.row.ID, end))
	case op.newNode().Issued:
		return cause // reconcileReplacement lets go of it for a later run
	}
	s.turnBackReplacement(ctx, op, cause)
	return nil
}

// turnBackReplacement records that the replacement is turned back (its new
// node could not be made), then removes the new node; a failure is left
// to the next run, which finds it failing.
func (s *Service) turnBackReplacement(ctx context.Context, op *replacement, cause error) {
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

// letGo releases a replacement whose run failed, for a later run to
// retry after RetryAfter.
func (r *Reconciler) letGo(ctx context.Context, c store.Cluster, lease store.Lease) {
	until := r.Service.now().Add(orDefault(r.RetryAfter, DefaultRetryAfter))
	if err := r.releaseActive(ctx, &operation{cluster: c, lease: lease}, until); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		r.Service.logger().WarnContext(ctx, "releasing a node replacement failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}

// releaseActive lets go of op's cluster (active) until until.
func (r *Reconciler) releaseActive(ctx context.Context, op *operation, until time.Time) error {
	c := op.cluster
	return recorded(r.Service.Store.Release(context.WithoutCancel(ctx), c.ID, op.lease.Owner,
		store.Released{Status: store.StatusActive, Until: until, Reason: c.StatusReason}))
}
