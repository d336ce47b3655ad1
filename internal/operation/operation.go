package operation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// Step is one step of an operation of state O. Run is checked against
// deadline before each remote side effect (ErrOutOfTime).
type Step[O any] struct {
	Name string
	Run  func(ctx context.Context, op O, deadline time.Time) error
}

// ErrOutOfTime stops a driver whose time is up between two side effects;
// everything done so far is recorded, so another driver carries on.
var ErrOutOfTime = errors.New("out of time to drive the operation")

// errWaiting marks a step that waits on something outside k8sapi.
var errWaiting = errors.New("waiting")

// Wait is the error of a step that cannot go on until the world moves
// (what says on what): the operation is looked at again later, not undone.
func Wait(what string) error { return fmt.Errorf("%s: %w", what, errWaiting) }

// InTime is checked before each remote side effect.
func InTime(now, deadline time.Time) error {
	if now.After(deadline) {
		return ErrOutOfTime
	}
	return nil
}

// Outcome is how one run of an operation ended (see the package doc).
type Outcome int

const (
	Done Outcome = iota
	Yielded
	Waiting
	LeaseLost
	Undone
	Retrying
)

var outcomeNames = [...]string{"done", "yielded", "waiting", "lease lost", "undone", "retrying"}

func (o Outcome) String() string { return outcomeNames[o] }

// Kind is one kind of operation over state O.
type Kind[O any] struct {
	Name  string
	Steps func(O) []Step[O]
	// Release lets go of op's lease until until (now: the next driver
	// carries on at once), leaving the operation where it is: at step, the
	// one it stopped before (recorded on the operation's row).
	Release func(ctx context.Context, op O, until time.Time, step string) error
	// Undo turns op back after cause failed one of its steps, on a context
	// that outlives the driver's. nil: the operation's end (or the way it
	// goes on) is recorded. An error: it could not be turned back now; the
	// kind recorded why where it could, and the operation is retried.
	Undo func(ctx context.Context, op O, cause error) error
}

// Driver is what every run shares: the clock, how long a failing
// operation waits before it is retried (RetryAfter), how soon a waiting
// one is looked at again (LookAgain; zero: RetryAfter) and how long an
// undo may take.
type Driver struct {
	Now         func() time.Time
	RetryAfter  time.Duration
	LookAgain   time.Duration
	UndoTimeout time.Duration
	Log         *slog.Logger
}

// Result is a run's outcome and, for Undone and Retrying, the cause.
type Result struct {
	Outcome Outcome
	Err     error
}

// Run runs steps in order over op, stopping at the first that fails.
func Run[O any](ctx context.Context, what string, steps []Step[O], op O, deadline time.Time) error {
	_, err := runSteps(ctx, what, steps, op, deadline)
	return err
}

// runSteps is Run, and the name of the step that failed.
func runSteps[O any](ctx context.Context, what string, steps []Step[O], op O, deadline time.Time) (string, error) {
	for _, st := range steps {
		if err := st.Run(ctx, op, deadline); err != nil {
			return st.Name, fmt.Errorf("%s step %q: %w", what, st.Name, err)
		}
	}
	return "", nil
}

// Drive runs k's steps over op until they are done, time is up, a step
// waits, the lease is lost or a step fails (then k undoes op).
func Drive[O any](ctx context.Context, d Driver, k Kind[O], op O, deadline time.Time) Result {
	step, err := runSteps(ctx, k.Name, k.Steps(op), op, deadline)
	switch {
	case err == nil:
		return Result{Outcome: Done}
	case errors.Is(err, store.ErrLeaseLost):
		return Result{Outcome: LeaseLost, Err: err}
	case errors.Is(err, ErrOutOfTime):
		release(ctx, d, k, op, d.Now(), step)
		return Result{Outcome: Yielded, Err: err}
	case errors.Is(err, errWaiting):
		release(ctx, d, k, op, d.Now().Add(cmp.Or(d.LookAgain, d.RetryAfter)), step)
		return Result{Outcome: Waiting, Err: err}
	}
	return undo(ctx, d, k, op, err)
}

// undo turns op back on a detached context bounded by UndoTimeout.
func undo[O any](ctx context.Context, d Driver, k Kind[O], op O, cause error) Result {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.UndoTimeout)
	defer cancel()
	if err := k.Undo(ctx, op, cause); err != nil {
		d.logger().ErrorContext(ctx, "undoing a failed operation failed; it is retried", "kind", k.Name, "cause", err.Error())
		return Result{Outcome: Retrying, Err: cause}
	}
	return Result{Outcome: Undone, Err: cause}
}

// release lets go of op until until; a failure is logged, as the lease
// then runs out by itself and the next driver takes the operation over.
func release[O any](ctx context.Context, d Driver, k Kind[O], op O, until time.Time, step string) {
	err := k.Release(context.WithoutCancel(ctx), op, until, step)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		d.logger().WarnContext(ctx, "releasing an operation failed; its lease runs out by itself", "kind", k.Name, "cause", err.Error())
	}
}

func (d Driver) logger() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// On is steps over state P run as steps over state O, which holds a P
// (of): a replacement makes its new node with a founding's node steps.
func On[O, P any](steps []Step[P], of func(O) P) []Step[O] {
	out := make([]Step[O], len(steps))
	for i, st := range steps {
		out[i] = Step[O]{Name: st.Name, Run: func(ctx context.Context, o O, d time.Time) error { return st.Run(ctx, of(o), d) }}
	}
	return out
}

// Retry is the Result of a handling that failed before or outside the
// steps (a row that did not load, a trust that did not open): a later
// driver tries again.
func Retry(err error) Result { return Result{Outcome: Retrying, Err: err} }

// Ended is the Result of a handling that ended the operation itself
// without the steps (outcome: Done or Undone), or Retry when err says that
// failed.
func Ended(outcome Outcome, err error) Result {
	if err != nil {
		return Retry(err)
	}
	return Result{Outcome: outcome}
}
