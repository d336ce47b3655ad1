package reconciler

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/carotation"
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
	// Remediation's decisions (docs/NODE-HEALTH.md): unhealthy nodes whose
	// replacement began, and those refused (each run they stay refused).
	Remediated          int `json:"remediated"`
	RemediationsRefused int `json:"remediations_refused"`
	// Control-plane scalings done, failed, and waiting for a new member.
	Scaled          int `json:"scaled"`
	ScalingsFailed  int `json:"scalings_failed"`
	ScalingsWaiting int `json:"scalings_waiting"`
	// Cluster upgrades ended (done or aborted) and paused on a failed gate.
	Upgraded       int `json:"upgraded"`
	UpgradesPaused int `json:"upgrades_paused"`
	// CA rotations done (or aborted), and holding for a node or a token
	// wait.
	Rotated          int `json:"rotated"`
	RotationsWaiting int `json:"rotations_waiting"`
}

// counter is where rep counts an outcome of the kind what (nil: not
// counted, as a run that yielded or lost its lease).
func (rep *Report) counter(what string, o engine.Outcome) *int {
	counters := map[string]map[engine.Outcome]*int{
		cluster.Founding:         {engine.Done: &rep.Finished, engine.Undone: &rep.Failed},
		cluster.Deletion:         {engine.Done: &rep.Deleted},
		nodepool.Pool:            {engine.Done: &rep.PoolsSettled, engine.Undone: &rep.PoolsTurnedBack},
		controlplane.Replacement: {engine.Done: &rep.Replaced, engine.Undone: &rep.ReplacementsFailed, engine.Waiting: &rep.ReplacementsWaiting},
		controlplane.Scaling:     {engine.Done: &rep.Scaled, engine.Undone: &rep.ScalingsFailed, engine.Waiting: &rep.ScalingsWaiting},
		upgrade.Kind:             {engine.Done: &rep.Upgraded, engine.Undone: &rep.UpgradesPaused},
		carotation.Rotation:      {engine.Done: &rep.Rotated, engine.Waiting: &rep.RotationsWaiting},
	}
	if o == engine.Retrying {
		return &rep.Retrying
	}
	return counters[what][o]
}

// Run judges the clusters' unhealthy nodes (remediate: a replacement it
// begins is driven in this same run), then claims and handles unfinished
// operations one at a time, the oldest due first whatever its kind, until
// none is left, or until the context's deadline is near (the rest wait for
// the next run). Due means due when the run began: an operation let go
// during the run (a wait looked at again in a few seconds) is the next
// run's, so a short look-again never spins one run on one operation.
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	var rep Report
	if err := r.remediate(ctx, &rep); err != nil {
		return rep, err
	}
	handlers := r.kinds()
	began := r.Deps.Clock()
	for {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < 30*time.Second {
			return rep, nil
		}
		claimed, err := r.claimNext(ctx, handlers, &rep, began)
		if err != nil || !claimed {
			return rep, err
		}
	}
}

// handler drives one claimed operation of a kind (it loads its target)
// and says which operation it was and how the run ended.
type handler func(context.Context, store.Operation, store.Lease, usecase.Pass) (string, engine.Result)

// kinds is every kind the reconciler drives, by its name in the table of
// operations (store.Kind*): a kind to come is one more row, its handler.
func (r *Reconciler) kinds() map[string]handler {
	clusters := &cluster.Service{Deps: r.Deps}
	pools := &nodepool.Service{Deps: r.Deps}
	cp := &controlplane.Service{Deps: r.Deps}
	up := &upgrade.Service{Deps: r.Deps}
	rotations := &carotation.Service{Deps: r.Deps}
	return map[string]handler{
		store.KindFounding:            onCluster(r, clusters.ReconcileCluster),
		store.KindDeletion:            onCluster(r, clusters.ReconcileCluster),
		store.KindNodePool:            onPool(r, pools.ReconcilePool),
		store.KindNodeReplacement:     onCluster(r, cp.ReconcileReplacement),
		store.KindControlPlaneScaling: onCluster(r, cp.ReconcileScaling),
		store.KindUpgrade:             onCluster(r, up.Reconcile),
		store.KindCARotation:          onCluster(r, rotations.ReconcileRotation),
	}
}

// onCluster is the handler of a kind driven over its cluster's row.
func onCluster(r *Reconciler, handle func(context.Context, store.Cluster, store.Lease, usecase.Pass) (string, engine.Result)) handler {
	return func(ctx context.Context, op store.Operation, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
		c, err := r.Deps.Store.Cluster(ctx, op.OrgID, op.ClusterID)
		if err != nil {
			return op.Kind, engine.Retry(err)
		}
		return handle(ctx, c, lease, pass)
	}
}

// onPool is the handler of a kind driven over its node pool's row.
func onPool(r *Reconciler, handle func(context.Context, store.Pool, store.Lease, usecase.Pass) (string, engine.Result)) handler {
	return func(ctx context.Context, op store.Operation, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
		p, err := r.Deps.Store.PoolByID(ctx, op.TargetID)
		if err != nil {
			return op.Kind, engine.Retry(err)
		}
		return handle(ctx, p, lease, pass)
	}
}

// claimNext claims the oldest operation due at dueAt under a fresh lease
// (the one claim statement, store.ClaimDue) and drives it with its kind's
// handler, acting for its org; false when none is due. A handling that
// failed is logged and counted as retrying; the operation goes on at a
// later run.
func (r *Reconciler) claimNext(ctx context.Context, handlers map[string]handler, rep *Report, dueAt time.Time) (bool, error) {
	d := r.Deps
	lease := d.NewLease(r.Lease, DefaultLease)
	op, err := d.Store.ClaimDue(ctx, lease, dueAt)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	handle, ok := handlers[op.Kind]
	if !ok {
		// Written by a newer k8sapi (a deployment in progress): its own
		// reconciler drives it once its lease runs out again.
		d.Logger().WarnContext(ctx, "reconciling: no handler for the operation's kind", "kind", op.Kind, "operation_id", op.ID)
		return true, nil
	}
	what, res := handle(r.actingFor(ctx, op.OrgID), op, lease, r.pass(ctx))
	if n := rep.counter(what, res.Outcome); n != nil {
		*n++
	}
	log := d.Logger().With("kind", op.Kind, "operation", what, "operation_id", op.ID, "cluster_id", op.ClusterID,
		"outcome", res.Outcome.String())
	if res.Outcome == engine.Retrying {
		log.WarnContext(ctx, "reconciling: the operation goes on at a later run", "cause", res.Err.Error())
	} else {
		log.InfoContext(ctx, "reconciled")
	}
	return true, nil
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
