package wiring

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/excloud/k8sapi/internal/api"
)

// deepCheckTTL is how long a deep health check's answer is reused. GET
// /health?deep=1 is unauthenticated: without this bound anyone could turn
// requests into database round trips and KMS calls. With it, one execution
// environment makes at most one ping per dependency per TTL, and the health
// function's reserved concurrency (template.yaml) bounds the environments.
const deepCheckTTL = 30 * time.Second

// cachedCheck answers from its last result while it is younger than ttl.
// The mutex is held across the ping on purpose: callers arriving during a
// ping wait for its result instead of starting another.
type cachedCheck struct {
	ping func(context.Context) error
	ttl  time.Duration
	now  func() time.Time

	mu     sync.Mutex
	at     time.Time
	err    error
	cached bool
}

// cached wraps each check's ping in a cachedCheck.
func cached(checks []api.Check, ttl time.Duration, now func() time.Time) []api.Check {
	out := make([]api.Check, len(checks))
	for i, c := range checks {
		cc := &cachedCheck{ping: c.Ping, ttl: ttl, now: now}
		out[i] = api.Check{Name: c.Name, Ping: cc.Ping}
	}
	return out
}

// Ping returns the cached result, or pings and remembers the answer: a
// failure too (a down dependency is not pinged harder), but not a ping the
// caller abandoned, which says nothing about the dependency.
func (c *cachedCheck) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached && c.now().Sub(c.at) < c.ttl {
		return c.err
	}
	err := c.ping(ctx)
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	c.at, c.err, c.cached = c.now(), err, true
	return err
}
