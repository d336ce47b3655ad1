package nodepool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
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

// vms is the workers that stay, as a vm.Set.
func (op *poolOperation) vms(s *Service) vm.Set {
	return vm.Set{Nodes: op.staying, Fence: op.fence(), Create: func(ctx context.Context, n store.Node) (int64, error) {
		return s.vms().Create(ctx, &op.cluster, n, &op.pool)
	}}
}

// poolSteps is the order of every pool operation (create, scale, delete,
// an undo), the truth both drivers follow: the workers that stay get their
// VMs and addresses, the retiring ones lose their VMs and rows, and the
// pool settles. (Functions, not package variables: a table built at init
// would link the pool operation into every binary that imports founding's
// types, the bundle function's too.)
func (s *Service) poolSteps() []engine.Step[*poolOperation] {
	return append([]engine.Step[*poolOperation]{
		{Name: "VMs", Run: func(ctx context.Context, op *poolOperation, d time.Time) error {
			return s.vms().EnsureVMs(ctx, op.vms(s), d)
		}},
		{Name: "addresses", Run: func(ctx context.Context, op *poolOperation, d time.Time) error {
			return s.vms().EnsureAddresses(ctx, op.vms(s), d)
		}},
	}, s.poolRemovalSteps()...)
}

// poolRemovalSteps end every pool operation, and are all an undo runs.
func (s *Service) poolRemovalSteps() []engine.Step[*poolOperation] {
	return []engine.Step[*poolOperation]{
		{Name: "retirement", Run: s.retireWorkers},
		{Name: "settling", Run: s.settlePool},
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
		if err = s.InTime(deadline); err != nil {
			break
		}
		if err = s.vms().Delete(ctx, &op.cluster, n); err != nil {
			break
		}
		gone = append(gone, n.Ordinal)
	}
	if len(gone) > 0 {
		if rerr := usecase.Recorded(s.Store.DeleteRetired(ctx, op.fence(), gone)); rerr != nil {
			return rerr
		}
		op.retiring = op.retiring[len(gone):]
	}
	return err
}

// settlePool ends the operation in the state its kind settles as.
func (s *Service) settlePool(ctx context.Context, op *poolOperation, _ time.Time) error {
	to := poolSettlesAs(op.pool.State)
	if err := usecase.Recorded(s.Store.SettlePool(ctx, op.pool.ID, op.lease.Owner, to, op.pool.StateReason, nil)); err != nil {
		return err
	}
	op.pool.State, op.pool.LastOp = to, op.pool.LastOp.Ended(store.PoolSettledReason(to, op.pool.StateReason), s.Clock())
	return nil
}

// drivePool advances the operation this request began until it is settled,
// the answer is due (Accepted: the engine let go of it and the reconciler
// finishes it) or a step fails: turned back now (the cause, and what the
// undo did), or not (503: it goes on).
func (s *Service) drivePool(ctx context.Context, op *poolOperation) (PoolResult, error) {
	res := engine.Drive(ctx, s.Driver(0), s.poolKind(), op, s.AnswerDeadline(ctx))
	switch res.Outcome {
	case engine.Done:
		return PoolResult{Pool: op.view()}, nil
	case engine.Yielded:
		return PoolResult{Pool: op.view(), Accepted: true}, nil
	case engine.LeaseLost:
		return PoolResult{}, apperr.NodePoolBusy.Detail("the node pool's operation was taken over (by the reconciler, or by its cluster's deletion); poll the pool")
	case engine.Undone:
		return PoolResult{}, usecase.TurnedBack(res.Err, op.turnedBack())
	}
	return PoolResult{}, usecase.GoesOn(res.Err, op.goesOn())
}

// turnedBack says what turnBack did: a create ends failed with no worker,
// a scale-up keeps the workers it finished.
func (op *poolOperation) turnedBack() string {
	if op.pool.State == store.PoolFailed {
		return "the create was turned back: its workers' VMs were deleted and the pool is failed"
	}
	return fmt.Sprintf("the scale was turned back: the pool keeps %d workers", len(op.staying))
}

// goesOn says what becomes of an operation that could not be turned back
// now (its undo failed, or it is a removal, which is never undone): the
// reconciler takes it over once its lease runs out.
func (op *poolOperation) goesOn() string {
	return fmt.Sprintf("node pool %q's operation goes on without this request: the reconciler finishes it "+
		"(or turns a create or scale-up back); poll GET /clusters/%d/node-pools/%s and repeat the request "+
		"(a create with the same Idempotency-Key)", op.pool.Name, op.pool.ClusterID, op.pool.Name)
}

func (op *poolOperation) view() apitypes.NodePool {
	return poolViewOf(op.pool, append(append([]store.Node{}, op.staying...), op.retiring...))
}

// turnBack undoes what a failed operation began: a create retires every
// worker and ends failed; a scale-up retires the workers it had not
// finished (no address yet) and keeps the rest; a deletion cannot be
// undone and is retried. The engine runs it on a context that outlives
// the request; if it fails too, the pool is let go with both reasons and
// the reconciler carries on from what is recorded.
func (s *Service) turnBack(ctx context.Context, op *poolOperation, cause error) error {
	reason := usecase.Reason(cause)
	move, undoable := turnBackMove(op, reason)
	err := cause
	if undoable {
		if err = s.Store.MovePool(ctx, op.pool.ID, op.lease.Owner, move); err == nil {
			op.pool.State, op.pool.StateReason = move.State, move.Reason
			op.retireOrdinals(move.Retire)
			err = engine.Run(ctx, "undoing node pool", s.poolRemovalSteps(), op, s.Clock().Add(usecase.UndoTimeout))
		}
	}
	if err != nil {
		s.movePool(ctx, op, store.PoolMove{State: op.pool.State, Reason: reason + "; retried every minute: " + usecase.Reason(err),
			Until: s.Clock().Add(usecase.DefaultRetryAfter)})
	}
	return err
}

// turnBackMove is how a failed operation of op's kind is turned back; a
// removal (deleting, failing) is not: false.
func turnBackMove(op *poolOperation, reason string) (store.PoolMove, bool) {
	switch op.pool.State {
	case store.PoolCreating:
		return store.PoolMove{State: store.PoolFailing, Reason: reason + "; its workers were removed",
			Retire: vm.OrdinalsOf(op.staying, indexes(op.staying)), Until: op.lease.Until}, true
	case store.PoolScaling:
		unfinished := vm.NodesWithout(op.staying, func(n store.Node) bool { return n.IPv4 != "" })
		kept := len(op.staying) - len(unfinished)
		return store.PoolMove{State: store.PoolScaling, Count: &kept, Retire: vm.OrdinalsOf(op.staying, unfinished), Until: op.lease.Until,
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
		s.Logger().WarnContext(ctx, "releasing a node pool operation failed", "node_pool_id", op.pool.ID, "cause", err.Error())
	}
}

func indexes(nodes []store.Node) []int {
	out := make([]int, len(nodes))
	for i := range nodes {
		out[i] = i
	}
	return out
}

// poolKind: every pool operation's steps (create, scale, delete); let go
// where it is; turned back as turnBack says.
func (s *Service) poolKind() engine.Kind[*poolOperation] {
	return engine.Kind[*poolOperation]{
		Name:  Pool,
		Steps: func(*poolOperation) []engine.Step[*poolOperation] { return s.poolSteps() },
		Release: func(ctx context.Context, op *poolOperation, until time.Time, step string) error {
			return s.Store.MovePool(ctx, op.pool.ID, op.lease.Owner,
				store.PoolMove{State: op.pool.State, Reason: op.pool.StateReason, Until: until, Step: step})
		},
		Undo: s.turnBack,
	}
}

// Pool names the kind in the reconciler's counts.
const Pool = "node pool"

// ReconcilePool drives claimed pool p's operation to its end, or turns it
// back when a step fails (a pool operation is always finished, never
// undone for its driver's death: its caller holds nothing only the answer
// carried, as a machine set's controller converges on the replicas asked
// for). A pool whose cluster is no longer active ends deleted: the
// cluster's deletion removes every worker's VM with the rest.
func (s *Service) ReconcilePool(ctx context.Context, p store.Pool, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	c, err := s.Store.Cluster(ctx, p.OrgID, p.ClusterID)
	if err != nil {
		return Pool, engine.Retry(err)
	}
	if c.Status != store.StatusActive {
		err = s.Store.SettlePool(ctx, p.ID, lease.Owner, store.PoolDeleted, "the cluster is "+c.Status, nil)
		return Pool, engine.Ended(engine.Done, err)
	}
	op, err := s.loadPoolOperation(ctx, c, p, lease)
	if err != nil {
		return Pool, engine.Retry(err)
	}
	return Pool, engine.Drive(ctx, s.Driver(pass.RetryAfter), s.poolKind(), op, pass.Deadline)
}
