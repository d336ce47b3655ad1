package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// DefaultReplaceWithin is how long a replacement waits for its new node
// to report ready.
const DefaultReplaceWithin = time.Hour

// Replacement names the kind in the reconciler's counts.
const Replacement = "node replacement"

// replacementKind: a replacement's steps under its operation's lease
// (its node writes fenced by it as a founding's are); let go as it stands; undone as undoReplacement says.
func (s *Service) replacementKind() engine.Kind[*replacement] {
	return engine.Kind[*replacement]{
		Name:  Replacement,
		Steps: func(*replacement) []engine.Step[*replacement] { return s.replacementSteps() },
		Release: func(ctx context.Context, op *replacement, until time.Time, step string) error {
			return s.releaseActive(ctx, op.op, until, step)
		},
		Undo: s.undoReplacement,
	}
}

// ReconcileReplacement drives claimed cluster c's replacement as far as it
// goes now (a replacement is always finished, or turned back when its new
// node cannot be made: its caller holds nothing the answer alone carried).
// A replacement already turned back (failing) has its new node removed.
// A failure lets go of the cluster for a later run.
func (s *Service) ReconcileReplacement(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	return s.lettingGoOnFailure(ctx, c, lease, pass, Replacement, s.reconcileReplacement)
}

// lettingGoOnFailure drives claimed cluster c's operation of kind what,
// and lets go of the cluster for a later run when the run failed.
func (s *Service) lettingGoOnFailure(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass, what string,
	drive func(context.Context, store.Cluster, store.Lease, usecase.Pass) engine.Result) (string, engine.Result) {
	res := drive(ctx, c, lease, pass)
	if res.Outcome == engine.Retrying && !errors.Is(res.Err, store.ErrLeaseLost) {
		s.letGo(ctx, c, lease, pass)
	}
	return what, res
}

func (s *Service) reconcileReplacement(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) engine.Result {
	op, err := s.replacementFor(ctx, c, lease, cmp.Or(pass.ReplaceWithin, DefaultReplaceWithin))
	if err != nil {
		return engine.Retry(err)
	}
	if op.row.State == store.ReplacementFailing {
		return engine.Ended(engine.Undone, s.removeNewNode(ctx, op))
	}
	if !op.newNode().Issued {
		if err := s.Open(ctx, op.op); err != nil {
			return engine.Retry(err)
		}
	}
	return engine.Drive(ctx, s.Driver(pass.RetryAfter), s.replacementKind(), op, pass.Deadline)
}

// undoReplacement ends a replacement one of whose steps failed: one whose
// new node never reported ready in time ends failed keeping both nodes, as
// neither can be judged from here; one whose new node has its identities
// is not turned back (the new member is in etcd: the old VM's deletion is
// retried); any other is turned back, its new node removed.
func (s *Service) undoReplacement(ctx context.Context, op *replacement, cause error) error {
	var late *notReadyInTime
	switch {
	case errors.As(cause, &late):
		end := store.ReplacementEnd{State: store.ReplacementFailed, Reason: late.Error(), Keep: op.old.ID}
		return usecase.Recorded(s.Store.EndReplacement(ctx, op.row.ClusterID, op.op.Lease.Owner, op.row.ID, end))
	case op.newNode().Issued:
		return cause // ReconcileReplacement lets go of it for a later run
	}
	s.turnBackReplacement(ctx, op, cause)
	return nil
}

// turnBackReplacement records that the replacement is turned back (its new
// node could not be made), then removes the new node; a failure is left
// to the next run, which finds it failing.
func (s *Service) turnBackReplacement(ctx context.Context, op *replacement, cause error) {
	reason := fmt.Sprintf("%s; the new node was removed and %s kept", usecase.Reason(cause), op.row.OldNodeName)
	err := s.Store.FailReplacement(ctx, op.row.ClusterID, op.op.Lease.Owner, op.row.ID, reason)
	if err == nil {
		op.row.State, op.row.StateReason = store.ReplacementFailing, reason
		err = s.removeNewNode(ctx, op)
	}
	if err != nil {
		s.Logger().ErrorContext(ctx, "turning back a node replacement failed; the next run retries", "cluster_id", op.row.ClusterID, "cause", err.Error())
	}
}

// removeNewNode deletes the new node's VM (one whose create was sent but
// whose id was never recorded is found by repeating the create), then its
// row with the CRL that revokes its etcd identities, keeps the old node
// and ends the replacement failed.
func (s *Service) removeNewNode(ctx context.Context, op *replacement) error {
	n := op.newNode()
	if err := s.vms().Delete(ctx, &op.op.Cluster, n); err != nil {
		return err
	}
	// Its VM may have fetched its identities: they are revoked as a retired
	// node's are (none issued: nothing to sign).
	crl, err := s.etcdRevocation(ctx, &op.op.Cluster, n)
	if err != nil {
		return err
	}
	end := store.ReplacementEnd{State: store.ReplacementFailed, Reason: op.row.StateReason, Remove: n.ID, Keep: op.old.ID, CRL: crl}
	return usecase.Recorded(s.Store.EndReplacement(ctx, op.row.ClusterID, op.op.Lease.Owner, op.row.ID, end))
}

// letGo releases a replacement whose run failed, for a later run to
// retry after RetryAfter.
func (s *Service) letGo(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) {
	until := s.Clock().Add(cmp.Or(pass.RetryAfter, usecase.DefaultRetryAfter))
	if err := s.releaseActive(ctx, &NodeOp{Cluster: c, Lease: lease}, until, ""); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.Logger().WarnContext(ctx, "releasing a node replacement failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}

// releaseActive lets go of op's replacement until until, leaving it as
// it stands at step.
func (s *Service) releaseActive(ctx context.Context, op *NodeOp, until time.Time, step string) error {
	return usecase.Recorded(s.Store.ReleaseLease(context.WithoutCancel(ctx), op.Cluster.ID, op.Lease.Owner, until, step))
}
