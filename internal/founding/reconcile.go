package founding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
)

// Reconciler finishes or undoes the operations whose driver died: a
// founding or a deletion whose lease ran out (the function timed out or
// crashed), and a deletion that failed and waits for its retry. It runs on
// a schedule (ReconcilerFunction, every minute) and is safe to run beside
// itself: each cluster is claimed by one short UPDATE … FOR UPDATE SKIP
// LOCKED, and every write after that is fenced by the claim's lease.
type Reconciler struct {
	Service *Service
	// ServiceToken is k8sapi's own platform credential: the operator who
	// started the operation is not there to lend theirs.
	ServiceToken string
	// Lease is how long a claim lasts; it must outlast the reconciler
	// function's timeout. ResumeWithin is how old a founding may be and
	// still be finished rather than undone. RetryAfter spaces the retries of
	// a failing deletion (and the looks at a replacement's new node).
	// ReplaceWithin is how long a replacement waits for its new node to
	// report ready. Zero: the Default* values.
	Lease, ResumeWithin, RetryAfter, ReplaceWithin time.Duration
}

// Defaults of the reconciler (its function times out after 5 minutes).
const (
	DefaultReconcileLease = 6 * time.Minute
	DefaultResumeWithin   = 15 * time.Minute
	DefaultRetryAfter     = time.Minute
	DefaultReplaceWithin  = time.Hour
)

// Report counts what one run did.
type Report struct {
	Finished int `json:"finished"` // foundings made active
	Failed   int `json:"failed"`   // foundings undone
	Deleted  int `json:"deleted"`  // deletions done
	Retrying int `json:"retrying"` // operations that failed again and wait for the next run
	// Node pool operations settled (created, scaled, deleted) and turned
	// back (an undone create or scale-up).
	PoolsSettled    int `json:"pools_settled"`
	PoolsTurnedBack int `json:"pools_turned_back"`
	// Control-plane node replacements done, failed (turned back, or whose
	// new node never reported ready) and still waiting for the new node.
	Replaced            int `json:"replaced"`
	ReplacementsFailed  int `json:"replacements_failed"`
	ReplacementsWaiting int `json:"replacements_waiting"`
}

// Run claims and handles unfinished operations one at a time, clusters'
// first, then node pools', then node replacements', until none is left, or until the context's
// deadline is near (the rest wait for the next run).
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	var rep Report
	for _, claimNext := range []func(context.Context, *Report) (bool, error){r.claimCluster, r.claimPool, r.claimReplacement} {
		for {
			if d, ok := ctx.Deadline(); ok && time.Until(d) < 30*time.Second {
				return rep, nil
			}
			claimed, err := claimNext(ctx, &rep)
			if err != nil {
				return rep, err
			}
			if !claimed {
				break
			}
		}
	}
	return rep, nil
}

// claimCluster claims one cluster whose operation's lease ran out and
// handles it; false when there is none.
func (r *Reconciler) claimCluster(ctx context.Context, rep *Report) (bool, error) {
	lease := r.Service.newLease(r.Lease, DefaultReconcileLease)
	c, err := r.Service.Store.ClaimExpired(ctx, lease, r.Service.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.reconcile(r.actingFor(ctx, c.OrgID), c, lease, rep)
	return true, nil
}

// actingFor is ctx calling the platform with k8sapi's own token for org.
func (r *Reconciler) actingFor(ctx context.Context, org int64) context.Context {
	return platformauth.WithOrg(platformauth.WithToken(ctx, r.ServiceToken), org)
}

// reconcile handles one claimed cluster and counts the outcome.
func (r *Reconciler) reconcile(ctx context.Context, c store.Cluster, lease store.Lease, rep *Report) {
	s := r.Service
	log := s.logger().With("cluster_id", c.ID, "status", c.Status)
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err == nil && c.Status == store.StatusDeleting {
		err = s.finishDeleting(ctx, &c, nodes, lease.Owner)
		count(rep, err, &rep.Deleted)
	} else if err == nil {
		err = r.endFounding(ctx, &operation{cluster: c, nodes: nodes, lease: lease}, rep)
	}
	if err != nil {
		log.WarnContext(ctx, "reconciling: the operation goes on at the next run", "cause", err.Error())
		r.release(ctx, c, lease, err)
		return
	}
	log.InfoContext(ctx, "reconciled")
}

func count(rep *Report, err error, done *int) {
	if err != nil {
		rep.Retrying++
		return
	}
	*done++
}

// endFounding finishes a founding whose caller can still obtain the
// kubeconfig and that is young enough; it undoes every other. A founding
// that cannot be finished is undone at once.
func (r *Reconciler) endFounding(ctx context.Context, op *operation, rep *Report) error {
	age := r.Service.now().Sub(op.cluster.CreatedAt)
	if !op.cluster.Resumable {
		return r.undo(ctx, op, rep, "the founding function stopped (timeout or crash) before answering; nothing is kept")
	}
	if age > orDefault(r.ResumeWithin, DefaultResumeWithin) {
		return r.undo(ctx, op, rep, fmt.Sprintf("the founding did not finish within %s; nothing is kept", orDefault(r.ResumeWithin, DefaultResumeWithin)))
	}
	err := r.resume(ctx, op)
	if err == nil {
		rep.Finished++
		return nil
	}
	if errors.Is(err, errOutOfTime) || errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	return r.undo(ctx, op, rep, reasonOf(err))
}

// resume opens the cluster's trust and runs the founding steps left.
func (r *Reconciler) resume(ctx context.Context, op *operation) error {
	if err := r.Service.open(ctx, op); err != nil {
		return err
	}
	return r.Service.advance(ctx, op, r.deadline(ctx))
}

// open reads op's spec and opens its cluster's trust, which issuing a
// node's identities needs.
func (s *Service) open(ctx context.Context, op *operation) error {
	spec, err := specOf(&op.cluster)
	if err != nil {
		return err
	}
	opened, err := keyring.Open(ctx, s.Envelope, &op.cluster)
	if err != nil {
		return kmsError(err)
	}
	op.spec, op.trust, op.dataKey = spec, opened.Trust, opened.DataKey
	return nil
}

// deadline is when a run stops driving an operation it claimed: half its
// lease, or 30 s before the run's own deadline if that comes first.
func (r *Reconciler) deadline(ctx context.Context) time.Time {
	return within(ctx, r.Service.now().Add(orDefault(r.Lease, DefaultReconcileLease)/2), 30*time.Second)
}

// undo tears the founding down; a failed teardown leaves it deleting (see
// Service.undo), which the next run retries.
func (r *Reconciler) undo(ctx context.Context, op *operation, rep *Report, reason string) error {
	r.Service.undo(ctx, op, reason)
	rep.Failed++
	return nil
}

// release lets go of a cluster whose handling failed, so a later run
// retries it: at once for a founding that ran out of time, after
// RetryAfter for anything else.
func (r *Reconciler) release(ctx context.Context, c store.Cluster, lease store.Lease, cause error) {
	s := r.Service
	until := s.now().Add(orDefault(r.RetryAfter, DefaultRetryAfter))
	if errors.Is(cause, errOutOfTime) {
		until = s.now()
	}
	if errors.Is(cause, store.ErrLeaseLost) {
		return // another run has it
	}
	current, err := s.Store.Cluster(ctx, c.OrgID, c.ID) // the handling may have moved it on
	if err != nil || (current.Status != store.StatusFounding && current.Status != store.StatusDeleting) {
		return
	}
	reason := current.StatusReason
	if !errors.Is(cause, errOutOfTime) && current.Status == store.StatusDeleting && reason == "" {
		reason = "deleting failed, retried every minute: " + reasonOf(cause)
	}
	released := store.Released{Status: current.Status, Until: until, Reason: reason}
	if err := s.Store.Release(ctx, c.ID, lease.Owner, released); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.logger().WarnContext(ctx, "releasing a reconciled cluster failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}
