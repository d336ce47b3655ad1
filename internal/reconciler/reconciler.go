package reconciler

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/nodepool"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/upgrade"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Reconciler finishes or undoes the operations whose driver died or let
// go: a founding or a deletion whose lease ran out (the function timed out
// or crashed), a deletion that failed and waits for its retry, a node
// pool's operation, a control-plane node's replacement. It runs on a
// schedule (ReconcilerFunction, every minute) and is safe to run beside
// itself: each operation is claimed by one short UPDATE … FOR UPDATE SKIP
// LOCKED, and every write after that is fenced by the claim's lease.
type Reconciler struct {
	Deps *usecase.Deps
	// ServiceToken is k8sapi's own platform credential: the operator who
	// started the operation is not there to lend theirs.
	ServiceToken string
	// Lease is how long a claim lasts; it must outlast the reconciler
	// function's timeout. ResumeWithin is how old a founding may be and
	// still be finished rather than undone. RetryAfter spaces the retries of
	// a failing operation (and the looks at a replacement's new node).
	// ReplaceWithin is how long a replacement waits for its new node to
	// report ready. Zero: the Default* values.
	Lease, ResumeWithin, RetryAfter, ReplaceWithin time.Duration
}

// DefaultLease is a claim's (the reconciler function times out after 5
// minutes).
const DefaultLease = 6 * time.Minute

// Report counts what one run did.
type Report struct {
	Finished int `json:"finished"` // foundings made active
	Failed   int `json:"failed"`   // foundings undone
	Deleted  int `json:"deleted"`  // deletions done
	Retrying int `json:"retrying"` // operations that failed again and wait for a later run
	// Node pool operations settled (created, scaled, deleted) and turned
	// back (an undone create or scale-up).
	PoolsSettled    int `json:"pools_settled"`
	PoolsTurnedBack int `json:"pools_turned_back"`
	// Control-plane node replacements done, failed (turned back, or whose
	// new node never reported ready) and still waiting for the new node.
	Replaced            int `json:"replaced"`
	ReplacementsFailed  int `json:"replacements_failed"`
	ReplacementsWaiting int `json:"replacements_waiting"`
	// Cluster upgrades ended (done or aborted) and paused on a failed gate.
	Upgraded       int `json:"upgraded"`
	UpgradesPaused int `json:"upgrades_paused"`
}

// counter is where rep counts an outcome of the kind what (nil: not
// counted, as a run that yielded or lost its lease).
func (rep *Report) counter(what string, o engine.Outcome) *int {
	counters := map[string]map[engine.Outcome]*int{
		cluster.Founding:         {engine.Done: &rep.Finished, engine.Undone: &rep.Failed},
		cluster.Deletion:         {engine.Done: &rep.Deleted},
		nodepool.Pool:            {engine.Done: &rep.PoolsSettled, engine.Undone: &rep.PoolsTurnedBack},
		controlplane.Replacement: {engine.Done: &rep.Replaced, engine.Undone: &rep.ReplacementsFailed, engine.Waiting: &rep.ReplacementsWaiting},
		upgrade.Kind:             {engine.Done: &rep.Upgraded, engine.Undone: &rep.UpgradesPaused},
	}
	if o == engine.Retrying {
		return &rep.Retrying
	}
	return counters[what][o]
}

// Run claims and handles unfinished operations one at a time, every kind
// in the order of kinds, until none is left, or until the context's
// deadline is near (the rest wait for the next run).
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	var rep Report
	for _, claimNext := range r.kinds() {
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

// kinds is every kind the reconciler drives, in the order it claims them:
// clusters' foundings and deletions first, then node pools' operations,
// then cluster upgrades (before the replacements: an upgrade that begins
// one hands its cluster over to them in the same run), then control-plane
// node replacements. A kind to come is one more row:
// its claim statement, its row's ids, its handler.
func (r *Reconciler) kinds() []claimer {
	st := r.Deps.Store
	clusters := &cluster.Service{Deps: r.Deps}
	pools := &nodepool.Service{Deps: r.Deps}
	cp := &controlplane.Service{Deps: r.Deps}
	up := &upgrade.Service{Deps: r.Deps}
	ofCluster := func(c store.Cluster) (int64, int64) { return c.OrgID, c.ID }
	return []claimer{
		claimWith(r, "cluster", st.ClaimExpired, ofCluster, clusters.ReconcileCluster),
		claimWith(r, nodepool.Pool, st.ClaimExpiredPool, func(p store.Pool) (int64, int64) { return p.OrgID, p.ID }, pools.ReconcilePool),
		claimWith(r, upgrade.Kind, st.ClaimExpiredUpgrade, ofCluster, up.Reconcile),
		claimWith(r, controlplane.Replacement, st.ClaimExpiredReplacement, ofCluster, cp.ReconcileReplacement),
	}
}

// handler drives one claimed row of a kind and says which operation it
// was and how the run ended.
type handler[R any] func(context.Context, R, store.Lease, usecase.Pass) (string, engine.Result)

// claimWith is the claimer of one kind: claim takes one row that is due
// under a fresh lease (store.ErrNotFound: none), ids names its org and
// itself, handle drives it acting for its org. A handling that failed is
// logged and counted as retrying; the operation goes on at a later run.
func claimWith[R any](r *Reconciler, what string, claim func(context.Context, store.Lease, time.Time) (R, error),
	ids func(R) (org, id int64), handle handler[R]) claimer {
	return func(ctx context.Context, rep *Report) (bool, error) {
		d := r.Deps
		lease := d.NewLease(r.Lease, DefaultLease)
		row, err := claim(ctx, lease, d.Clock())
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		org, id := ids(row)
		op, res := handle(r.actingFor(ctx, org), row, lease, r.pass(ctx))
		if n := rep.counter(op, res.Outcome); n != nil {
			*n++
		}
		log := d.Logger().With("kind", what, "operation", op, "id", id, "outcome", res.Outcome.String())
		if res.Outcome == engine.Retrying {
			log.WarnContext(ctx, "reconciling: the operation goes on at a later run", "cause", res.Err.Error())
		} else {
			log.InfoContext(ctx, "reconciled")
		}
		return true, nil
	}
}

// actingFor is ctx calling the platform with k8sapi's own token for org.
func (r *Reconciler) actingFor(ctx context.Context, org int64) context.Context {
	return platformauth.WithOrg(platformauth.WithToken(ctx, r.ServiceToken), org)
}

// pass is this run's limits for the handlers: they stop driving at half
// the lease, or 30 s before the run's own deadline if that comes first.
func (r *Reconciler) pass(ctx context.Context) usecase.Pass {
	deadline := usecase.Within(ctx, r.Deps.Clock().Add(cmp.Or(r.Lease, DefaultLease)/2), 30*time.Second)
	return usecase.Pass{Deadline: deadline, RetryAfter: r.RetryAfter, ResumeWithin: r.ResumeWithin, ReplaceWithin: r.ReplaceWithin}
}
