package founding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// poolOperation is one pool operation as its driver (ClustersFunction or
// the reconciler) sees it: the pool's cluster, the committed pool row, its
// workers as recorded (those that stay and those to be removed), and the
// lease that fences every write.
type poolOperation struct {
	cluster  store.Cluster
	pool     store.Pool
	staying  []store.Node
	retiring []store.Node
	lease    store.Lease
}

func newPoolOperation(c store.Cluster, p store.Pool, nodes []store.Node, lease store.Lease) *poolOperation {
	op := &poolOperation{cluster: c, pool: p, lease: lease}
	for _, n := range nodes {
		if n.Retiring {
			op.retiring = append(op.retiring, n)
		} else {
			op.staying = append(op.staying, n)
		}
	}
	return op
}

func (op *poolOperation) fence() store.Fence { return store.PoolLease(op.pool.ID, op.lease.Owner) }

// vms is the workers that stay, as a vmSet.
func (op *poolOperation) vms(s *Service) vmSet {
	return vmSet{nodes: op.staying, fence: op.fence(), create: func(ctx context.Context, n store.Node) (int64, error) {
		return s.createWorkerVM(ctx, &op.cluster, op.pool, n)
	}}
}

// poolSteps is the order of every pool operation (create, scale, delete,
// an undo), the truth both drivers follow: the workers that stay get their
// VMs and addresses, the retiring ones lose their VMs and rows, and the
// pool settles. (Functions, not package variables: a table built at init
// would link the pool operation into every binary that imports founding's
// types, the bundle function's too.)
func poolSteps() []step[*poolOperation] {
	return append([]step[*poolOperation]{
		{"VMs", func(s *Service, ctx context.Context, op *poolOperation, d time.Time) error {
			return s.ensureVMs(ctx, op.vms(s), d)
		}},
		{"addresses", func(s *Service, ctx context.Context, op *poolOperation, d time.Time) error {
			return s.ensureAddresses(ctx, op.vms(s), d)
		}},
	}, poolRemovalSteps()...)
}

// poolRemovalSteps end every pool operation, and are all an undo runs.
func poolRemovalSteps() []step[*poolOperation] {
	return []step[*poolOperation]{
		{"retirement", (*Service).retireWorkers},
		{"settling", (*Service).settlePool},
	}
}

// poolSettlesAs is the state an operation of state's kind ends in.
func poolSettlesAs(state string) string {
	switch state {
	case store.PoolDeleting:
		return store.PoolDeleted
	case store.PoolFailing:
		return store.PoolFailed
	}
	return store.PoolActive // creating, scaling
}

// retireWorkers deletes the VM of every retiring worker (one whose create
// was sent but whose id was never recorded is found by repeating the
// create), then their rows in one statement: those done before a failure
// too, so a VM is deleted before its row and never after.
func (s *Service) retireWorkers(ctx context.Context, op *poolOperation, deadline time.Time) error {
	var gone []int
	var err error
	for _, n := range op.retiring {
		if err = s.inTime(deadline); err != nil {
			break
		}
		if err = s.deleteVM(ctx, &op.cluster, n); err != nil {
			break
		}
		gone = append(gone, n.Ordinal)
	}
	if len(gone) > 0 {
		if rerr := recorded(s.Store.DeleteRetired(ctx, op.fence(), gone)); rerr != nil {
			return rerr
		}
		op.retiring = op.retiring[len(gone):]
	}
	return err
}

// settlePool ends the operation in the state its kind settles as.
func (s *Service) settlePool(ctx context.Context, op *poolOperation, _ time.Time) error {
	to := poolSettlesAs(op.pool.State)
	if err := recorded(s.Store.SettlePool(ctx, op.pool.ID, op.lease.Owner, to, op.pool.StateReason, nil)); err != nil {
		return err
	}
	op.pool.State, op.pool.LeaseOwner, op.pool.LeaseUntil = to, nil, nil
	return nil
}

// drivePool advances the operation this request began until it is settled,
// the answer is due (Accepted: the engine let go of it and the reconciler
// finishes it) or a step fails (turned back now, or by the reconciler if
// even that fails).
func (s *Service) drivePool(ctx context.Context, op *poolOperation) (PoolResult, error) {
	res := engine.Drive(ctx, s.driver(0), s.poolKind(), op, s.answerDeadline(ctx))
	switch res.Outcome {
	case engine.Done:
		return PoolResult{Pool: op.view()}, nil
	case engine.Yielded:
		return PoolResult{Pool: op.view(), Accepted: true}, nil
	case engine.LeaseLost:
		return PoolResult{}, apperr.NodePoolBusy.Detail("the node pool's operation was taken over (by the reconciler, or by its cluster's deletion); poll the pool")
	}
	return PoolResult{}, res.Err
}

func (op *poolOperation) view() PoolView {
	return poolViewOf(op.pool, append(append([]store.Node{}, op.staying...), op.retiring...))
}

// turnBack undoes what a failed operation began: a create retires every
// worker and ends failed; a scale-up retires the workers it had not
// finished (no address yet) and keeps the rest; a deletion cannot be
// undone and is retried. The engine runs it on a context that outlives
// the request; if it fails too, the pool is let go with both reasons and
// the reconciler carries on from what is recorded.
func (s *Service) turnBack(ctx context.Context, op *poolOperation, cause error) error {
	reason := reasonOf(cause)
	move, undoable := turnBackMove(op, reason)
	err := cause
	if undoable {
		if err = s.Store.MovePool(ctx, op.pool.ID, op.lease.Owner, move); err == nil {
			op.pool.State, op.pool.StateReason = move.State, move.Reason
			op.retireOrdinals(move.Retire)
			err = engine.Run(ctx, "undoing node pool", stepsOf(s, poolRemovalSteps()), op, s.now().Add(cleanupTimeout))
		}
	}
	if err != nil {
		s.movePool(ctx, op, store.PoolMove{State: op.pool.State, Reason: reason + "; retried every minute: " + reasonOf(err),
			Until: s.now().Add(DefaultRetryAfter)})
	}
	return err
}

// turnBackMove is how a failed operation of op's kind is turned back; a
// removal (deleting, failing) is not: false.
func turnBackMove(op *poolOperation, reason string) (store.PoolMove, bool) {
	switch op.pool.State {
	case store.PoolCreating:
		return store.PoolMove{State: store.PoolFailing, Reason: reason + "; its workers were removed",
			Retire: ordinalsOf(op.staying, indexes(op.staying)), Until: op.lease.Until}, true
	case store.PoolScaling:
		unfinished := nodesWithout(op.staying, func(n store.Node) bool { return n.IPv4 != "" })
		kept := len(op.staying) - len(unfinished)
		return store.PoolMove{State: store.PoolScaling, Count: &kept, Retire: ordinalsOf(op.staying, unfinished), Until: op.lease.Until,
			Reason: fmt.Sprintf("scaling to %d failed (%s); the pool keeps %d workers", op.pool.Count, reason, kept)}, true
	}
	return store.PoolMove{}, false
}

// retireOrdinals moves the staying workers at ordinals to the retiring.
func (op *poolOperation) retireOrdinals(ordinals []int) {
	var staying []store.Node
	for _, n := range op.staying {
		if slices.Contains(ordinals, n.Ordinal) {
			op.retiring = append(op.retiring, n)
		} else {
			staying = append(staying, n)
		}
	}
	op.staying = staying
}

// movePool records m, logging a failure: the lease then runs out by
// itself and the reconciler takes the operation over.
func (s *Service) movePool(ctx context.Context, op *poolOperation, m store.PoolMove) {
	if err := s.Store.MovePool(context.WithoutCancel(ctx), op.pool.ID, op.lease.Owner, m); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.logger().WarnContext(ctx, "releasing a node pool operation failed", "node_pool_id", op.pool.ID, "cause", err.Error())
	}
}

func indexes(nodes []store.Node) []int {
	out := make([]int, len(nodes))
	for i := range nodes {
		out[i] = i
	}
	return out
}
