package founding

import (
	"context"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// The kinds of operation founding drives on the engine (package
// operation, imported as engine: founding's own operation type is a
// founding's state). Each is its steps, its release and its undo; the
// drivers (the API request, the reconciler) only choose the deadline and
// read the outcome. (Functions, not package variables: a table built at
// init would link every kind into every binary that imports founding's
// types, the bundle function's too.)

// driver is what every run of s's operations shares; retryAfter zero is
// DefaultRetryAfter.
func (s *Service) driver(retryAfter time.Duration) engine.Driver {
	return engine.Driver{Now: s.now, RetryAfter: orDefault(retryAfter, DefaultRetryAfter), UndoTimeout: cleanupTimeout, Log: s.logger()}
}

// foundingKind: a founding's steps; let go still founding (and resumable:
// its caller holds the key to follow it); undone by tearing down what it
// made.
func (s *Service) foundingKind() engine.Kind[*operation] {
	return engine.Kind[*operation]{
		Name:  "founding",
		Steps: func(*operation) []engine.Step[*operation] { return stepsOf(s, foundingSteps()) },
		Release: func(ctx context.Context, op *operation, until time.Time) error {
			return s.Store.Release(ctx, op.cluster.ID, op.lease.Owner,
				store.Released{Status: store.StatusFounding, Until: until, Resumable: true})
		},
		Undo: func(ctx context.Context, op *operation, cause error) error { return s.undo(ctx, op, reasonOf(cause)) },
	}
}

// poolKind: every pool operation's steps (create, scale, delete); let go
// where it is; turned back as turnBack says.
func (s *Service) poolKind() engine.Kind[*poolOperation] {
	return engine.Kind[*poolOperation]{
		Name:  "node pool",
		Steps: func(*poolOperation) []engine.Step[*poolOperation] { return stepsOf(s, poolSteps()) },
		Release: func(ctx context.Context, op *poolOperation, until time.Time) error {
			return s.Store.MovePool(ctx, op.pool.ID, op.lease.Owner,
				store.PoolMove{State: op.pool.State, Reason: op.pool.StateReason, Until: until})
		},
		Undo: s.turnBack,
	}
}

// replacementKind: a replacement's steps under the cluster's lease; let go
// with the cluster active; undone as undoReplacement says.
func (r *Reconciler) replacementKind() engine.Kind[*replacement] {
	s := r.Service
	return engine.Kind[*replacement]{
		Name:  "node replacement",
		Steps: func(*replacement) []engine.Step[*replacement] { return stepsOf(s, replacementSteps()) },
		Release: func(ctx context.Context, op *replacement, until time.Time) error {
			return r.releaseActive(ctx, op.op, until)
		},
		Undo: func(ctx context.Context, op *replacement, cause error) error {
			return r.undoReplacement(ctx, op, cause)
		},
	}
}

// tally is where the reconciler counts each outcome of one kind.
type tally struct{ done, undone, waiting *int }

// count counts res; an operation that goes on (it failed and could not
// be undone now) is the caller's error to log and count as retrying.
func (t tally) count(res engine.Result) error {
	counter := map[engine.Outcome]*int{engine.Done: t.done, engine.Undone: t.undone, engine.Waiting: t.waiting}[res.Outcome]
	if counter != nil {
		*counter++
	}
	if res.Outcome == engine.Retrying {
		return res.Err
	}
	return nil // Yielded, LeaseLost: released already, or another run has it
}
