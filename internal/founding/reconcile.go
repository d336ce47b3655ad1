package founding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/keyring"
	engine "github.com/excloud/k8sapi/internal/operation"
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

// Run claims and handles unfinished operations one at a time, every
// kind in the order of reconciledKinds, until none is left, or until the
// context's deadline is near (the rest wait for the next run).
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	var rep Report
	for _, claimNext := range r.reconciledKinds() {
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

// claimer claims one operation of its kind that is due and handles it;
// false when there is none.
type claimer func(context.Context, *Report) (bool, error)

// reconciledKinds is every kind the reconciler drives, in the order it
// claims them: clusters' foundings and deletions first, then node pools'
// operations, then control-plane node replacements.
func (r *Reconciler) reconciledKinds() []claimer {
	return []claimer{
		claimWith(r, "cluster", r.Service.Store.ClaimExpired, func(c store.Cluster) (int64, int64) { return c.OrgID, c.ID }, r.reconcile),
		claimWith(r, "node pool", r.Service.Store.ClaimExpiredPool, func(p store.Pool) (int64, int64) { return p.OrgID, p.ID }, r.reconcilePool),
		claimWith(r, "node replacement", r.Service.Store.ClaimExpiredReplacement, func(c store.Cluster) (int64, int64) { return c.OrgID, c.ID },
			r.reconcileReplacement),
	}
}

// claimWith is the claimer of one kind: claim takes one row that is due
// under a fresh lease (store.ErrNotFound: none), ids names its org and
// itself, handle drives it acting for its org. A handling that failed is
// logged and counted; the operation goes on at a later run.
func claimWith[R any](r *Reconciler, what string, claim func(context.Context, store.Lease, time.Time) (R, error),
	ids func(R) (org, id int64), handle func(context.Context, R, store.Lease, *Report) error) claimer {
	return func(ctx context.Context, rep *Report) (bool, error) {
		s := r.Service
		lease := s.newLease(r.Lease, DefaultReconcileLease)
		row, err := claim(ctx, lease, s.now())
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		org, id := ids(row)
		log := s.logger().With("kind", what, "id", id)
		if err := handle(r.actingFor(ctx, org), row, lease, rep); err != nil {
			log.WarnContext(ctx, "reconciling: the operation goes on at a later run", "cause", err.Error())
			rep.Retrying++
			return true, nil
		}
		log.InfoContext(ctx, "reconciled")
		return true, nil
	}
}

// actingFor is ctx calling the platform with k8sapi's own token for org.
func (r *Reconciler) actingFor(ctx context.Context, org int64) context.Context {
	return platformauth.WithOrg(platformauth.WithToken(ctx, r.ServiceToken), org)
}

// reconcile handles one claimed cluster: it finishes its deletion, or
// ends its founding. A failure lets go of the cluster for a later run.
func (r *Reconciler) reconcile(ctx context.Context, c store.Cluster, lease store.Lease, rep *Report) error {
	s := r.Service
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err == nil && c.Status == store.StatusDeleting {
		if err = s.finishDeleting(ctx, &c, nodes, lease.Owner); err == nil {
			rep.Deleted++
		}
	} else if err == nil {
		err = r.endFounding(ctx, &operation{cluster: c, nodes: nodes, lease: lease}, rep)
	}
	if err != nil {
		r.release(ctx, c, lease, err)
	}
	return err
}

// endFounding finishes a founding whose caller can still obtain the
// kubeconfig and that is young enough; it undoes every other. A founding
// that cannot be finished is undone at once.
func (r *Reconciler) endFounding(ctx context.Context, op *operation, rep *Report) error {
	s := r.Service
	within := orDefault(r.ResumeWithin, DefaultResumeWithin)
	var res engine.Result
	switch age := s.now().Sub(op.cluster.CreatedAt); {
	case !op.cluster.Resumable:
		res = r.undoNow(ctx, op, "the founding function stopped (timeout or crash) before answering; nothing is kept")
	case age > within:
		res = r.undoNow(ctx, op, fmt.Sprintf("the founding did not finish within %s; nothing is kept", within))
	default:
		res = r.resume(ctx, op)
	}
	return tally{done: &rep.Finished, undone: &rep.Failed}.count(res)
}

// resume opens the cluster's trust and runs the founding steps left; a
// trust that does not open undoes the founding.
func (r *Reconciler) resume(ctx context.Context, op *operation) engine.Result {
	s := r.Service
	if err := s.open(ctx, op); err != nil {
		return r.undoNow(ctx, op, reasonOf(err))
	}
	return engine.Drive(ctx, s.driver(r.RetryAfter), s.foundingKind(), op, r.deadline(ctx))
}

// undoNow undoes a founding that will not be finished, saying why.
func (r *Reconciler) undoNow(ctx context.Context, op *operation, reason string) engine.Result {
	if err := r.Service.undo(ctx, op, reason); err != nil {
		return engine.Result{Outcome: engine.Retrying, Err: err}
	}
	return engine.Result{Outcome: engine.Undone}
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

// release lets go of a cluster whose handling failed, so a later run
// retries it after RetryAfter.
func (r *Reconciler) release(ctx context.Context, c store.Cluster, lease store.Lease, cause error) {
	s := r.Service
	until := s.now().Add(orDefault(r.RetryAfter, DefaultRetryAfter))
	if errors.Is(cause, store.ErrLeaseLost) {
		return // another run has it
	}
	current, err := s.Store.Cluster(ctx, c.OrgID, c.ID) // the handling may have moved it on
	if err != nil || (current.Status != store.StatusFounding && current.Status != store.StatusDeleting) {
		return
	}
	reason := current.StatusReason
	if current.Status == store.StatusDeleting && reason == "" {
		reason = "deleting failed, retried every minute: " + reasonOf(cause)
	}
	released := store.Released{Status: current.Status, Until: until, Reason: reason}
	if err := s.Store.Release(ctx, c.ID, lease.Owner, released); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.logger().WarnContext(ctx, "releasing a reconciled cluster failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
	}
}
