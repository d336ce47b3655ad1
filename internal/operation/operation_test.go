package operation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// trace is an operation that records what the engine did with it.
type trace struct {
	ran      []string
	released []time.Time
	at       []string // the steps it was let go at
	undone   error
	// undoCtxErr and undoHasDeadline are the undo's context as it ran.
	undoCtxErr      error
	undoHasDeadline bool
}

func kindOf(stepErrs []error, undoErr error) Kind[*trace] {
	return Kind[*trace]{
		Name: "test",
		Steps: func(*trace) []Step[*trace] {
			var steps []Step[*trace]
			for i, e := range stepErrs {
				steps = append(steps, Step[*trace]{Name: fmt.Sprint(i), Run: func(_ context.Context, t *trace, _ time.Time) error {
					t.ran = append(t.ran, fmt.Sprint(i))
					return e
				}})
			}
			return steps
		},
		Release: func(_ context.Context, t *trace, until time.Time, step string) error {
			t.released, t.at = append(t.released, until), append(t.at, step)
			return nil
		},
		Undo: func(ctx context.Context, t *trace, cause error) error {
			_, t.undoHasDeadline = ctx.Deadline()
			t.undone, t.undoCtxErr = cause, ctx.Err()
			return undoErr
		},
	}
}

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func driver() Driver {
	return Driver{Now: func() time.Time { return t0 }, RetryAfter: time.Minute, LookAgain: 5 * time.Second, UndoTimeout: time.Second}
}

// Every way a run ends, with what the engine did: how far the steps ran,
// when it let go, whether it undid.
func TestDriveEndsEveryRunInOneOutcome(t *testing.T) {
	failed := errors.New("the platform said no")
	cases := []struct {
		name     string
		steps    []error
		undoErr  error
		want     Outcome
		ran      int
		released []time.Time
		undone   bool
	}{
		{"every step done", []error{nil, nil}, nil, Done, 2, nil, false},
		{"out of time", []error{nil, ErrOutOfTime, nil}, nil, Yielded, 2, []time.Time{t0}, false},
		{"waiting on the world", []error{Wait("node not ready"), nil}, nil, Waiting, 1, []time.Time{t0.Add(5 * time.Second)}, false},
		{"lease lost", []error{fmt.Errorf("recording: %w", store.ErrLeaseLost)}, nil, LeaseLost, 1, nil, false},
		{"failed and undone", []error{nil, failed, nil}, nil, Undone, 2, nil, true},
		{"failed, undo failed", []error{failed}, errors.New("undo failed"), Retrying, 1, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := &trace{}
			res := Drive(context.Background(), driver(), kindOf(c.steps, c.undoErr), op, t0)
			if res.Outcome != c.want || len(op.ran) != c.ran || fmt.Sprint(op.released) != fmt.Sprint(c.released) || (op.undone != nil) != c.undone {
				t.Fatalf("outcome %s, ran %v, released %v, undone %v; want %s, %d steps, released %v, undone %v",
					res.Outcome, op.ran, op.released, op.undone, c.want, c.ran, c.released, c.undone)
			}
			if len(op.released) > 0 && fmt.Sprint(op.at) != fmt.Sprint([]int{c.ran - 1}) {
				t.Fatalf("let go at steps %v, want at the one that stopped (%d)", op.at, c.ran-1)
			}
			if c.undone && !errors.Is(res.Err, failed) {
				t.Fatalf("the result's cause is %v, want the failed step's", res.Err)
			}
		})
	}
}

// An undo outlives the driver's context (a request that is gone still
// has its VMs deleted) and is bounded by UndoTimeout.
func TestUndoRunsOnADetachedBoundedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	op := &trace{}
	k := kindOf([]error{errors.New("boom")}, nil)
	steps := k.Steps
	k.Steps = func(o *trace) []Step[*trace] { cancel(); return steps(o) }
	Drive(ctx, driver(), k, op, t0)
	if op.undoCtxErr != nil {
		t.Fatalf("the undo's context is done with the driver's: %v", op.undoCtxErr)
	}
	if !op.undoHasDeadline {
		t.Fatal("the undo's context has no deadline")
	}
}

func TestInTimeStopsOnlyAfterTheDeadline(t *testing.T) {
	if InTime(t0, t0) != nil || !errors.Is(InTime(t0.Add(time.Nanosecond), t0), ErrOutOfTime) {
		t.Fatal("InTime must pass at the deadline and stop after it")
	}
}
