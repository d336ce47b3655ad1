package lambdaruntime

import (
	"context"
	"sync"
)

// MaxEnvironments bounds a function's execution environments in the local
// stack: enough that concurrent requests run side by side, as Lambda runs
// them in more instances, few enough for a laptop.
const MaxEnvironments = 4

// Fleet runs one function as Lambda scales it: a request takes an idle
// execution environment (a Runner, one invocation in flight each) or, when
// all are busy, starts another, up to its bound; past it, requests wait
// for one to come free.
type Fleet struct {
	start func() (*Runner, error) // a new environment, its process not yet started
	slots chan struct{}           // one per environment that may be busy

	mu   sync.Mutex
	idle []*Runner
	all  []*Runner
}

var _ Invoker = (*Fleet)(nil)

// NewFleet runs a function in up to max environments, each made by start.
func NewFleet(start func() (*Runner, error), max int) *Fleet {
	return &Fleet{start: start, slots: make(chan struct{}, max)}
}

// Warm starts the first environment's process, so the first request pays
// no process start.
func (f *Fleet) Warm() error {
	r, err := f.take()
	if err == nil {
		err = r.Start()
		f.give(r)
	}
	return err
}

// Invoke runs the invocation in an idle environment.
func (f *Fleet) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	select {
	case f.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-f.slots }()
	r, err := f.take()
	if err != nil {
		return nil, err
	}
	defer f.give(r)
	return r.Invoke(ctx, payload)
}

// take is an idle environment, or a new one.
func (f *Fleet) take() (*Runner, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.idle); n > 0 {
		r := f.idle[n-1]
		f.idle = f.idle[:n-1]
		return r, nil
	}
	r, err := f.start()
	if err == nil {
		f.all = append(f.all, r)
	}
	return r, err
}

func (f *Fleet) give(r *Runner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idle = append(f.idle, r)
}

// Runners are the environments the fleet has made.
func (f *Fleet) Runners() []*Runner {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Runner(nil), f.all...)
}

// CloseAll stops runners side by side: each may take its grace period.
func CloseAll(runners []*Runner) {
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(r.Close)
	}
	wg.Wait()
}
