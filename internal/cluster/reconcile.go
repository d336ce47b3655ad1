package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/controlplane"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The names of a cluster's kinds in the reconciler's counts.
const (
	Founding = "founding"
	Deletion = "deletion"
)

// DefaultResumeWithin is how old a founding may be and still be finished
// rather than undone.
const DefaultResumeWithin = 15 * time.Minute

// ReconcileCluster handles one claimed cluster: it finishes its deletion,
// or ends its founding. A failure lets go of the cluster for a later run.
func (s *Service) ReconcileCluster(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	what, res := s.reconcileCluster(ctx, c, lease, pass)
	if res.Outcome == engine.Retrying {
		s.release(ctx, c, lease, pass, res.Err)
	}
	return what, res
}

func (s *Service) reconcileCluster(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	switch {
	case err != nil:
		return Founding, engine.Retry(err)
	case c.Status == store.StatusDeleting:
		return Deletion, engine.Ended(engine.Done, s.finishDeleting(ctx, &c, nodes, lease.Owner))
	}
	return Founding, s.endFounding(ctx, &controlplane.NodeOp{Cluster: c, Nodes: nodes, Lease: lease}, pass)
}

// endFounding finishes a founding whose caller can still obtain the
// kubeconfig and that is young enough; it undoes every other. A founding
// that cannot be finished is undone at once.
func (s *Service) endFounding(ctx context.Context, op *controlplane.NodeOp, pass usecase.Pass) engine.Result {
	within := cmp.Or(pass.ResumeWithin, DefaultResumeWithin)
	var res engine.Result
	switch age := s.Clock().Sub(op.Cluster.CreatedAt); {
	case !op.Cluster.Resumable:
		res = s.undoNow(ctx, op, "the founding function stopped (timeout or crash) before answering; nothing is kept")
	case age > within:
		res = s.undoNow(ctx, op, fmt.Sprintf("the founding did not finish within %s; nothing is kept", within))
	default:
		res = s.resume(ctx, op, pass)
	}
	return res
}

// resume opens the cluster's trust and runs the founding steps left; a
// trust that does not open undoes the founding.
func (s *Service) resume(ctx context.Context, op *controlplane.NodeOp, pass usecase.Pass) engine.Result {
	if err := s.controlPlane().Open(ctx, op); err != nil {
		return s.undoNow(ctx, op, usecase.Reason(err))
	}
	return engine.Drive(ctx, s.Driver(pass.RetryAfter), s.foundingKind(), op, pass.Deadline)
}

// undoNow undoes a founding that will not be finished, saying why.
func (s *Service) undoNow(ctx context.Context, op *controlplane.NodeOp, reason string) engine.Result {
	if err := s.undo(ctx, op, reason); err != nil {
		return engine.Retry(err)
	}
	return engine.Result{Outcome: engine.Undone}
}

// release lets go of a cluster whose handling failed, so a later run
// retries it after RetryAfter.
func (s *Service) release(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass, cause error) {
	until := s.Clock().Add(cmp.Or(pass.RetryAfter, usecase.DefaultRetryAfter))
	if errors.Is(cause, store.ErrLeaseLost) {
		return // another run has it
	}
	current, err := s.Store.Cluster(ctx, c.OrgID, c.ID) // the handling may have moved it on
	if err != nil || (current.Status != store.StatusFounding && current.Status != store.StatusDeleting) {
		return
	}
	reason := current.StatusReason
	if current.Status == store.StatusDeleting && reason == "" {
		reason = "deleting failed, retried every minute: " + usecase.Reason(cause)
	}
	released := store.Released{Status: current.Status, Until: until, Reason: reason}
	if err := s.Store.Release(ctx, c.ID, lease.Owner, released); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.Logger().WarnContext(ctx, "releasing a reconciled cluster failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}
