// Package vmlimit limits how often one VM may call each of its bootstrap
// routes. API Gateway's throttles are per route and shared by every VM, so
// one VM calling in a loop would starve the others and fill the fetch
// table; a budget per VM and route, counted in PostgreSQL (the functions
// are stateless and many), stops that one VM alone with 429 and
// Retry-After. It counts only VMs that passed the four proofs.
package vmlimit

import (
	"context"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
)

// Budget is how many calls of one route a VM may make per period. The zero
// Budget is no limit (the operator's routes).
type Budget struct {
	Calls int
	Per   time.Duration
}

// Limited reports whether b limits anything.
func (b Budget) Limited() bool { return b.Calls > 0 }

// Counter is the part of the store that counts calls.
type Counter interface {
	CountCall(ctx context.Context, vmID int64, route string, now time.Time, per time.Duration) (store.CallWindow, error)
}

var _ Counter = (*store.Store)(nil)

// Limiter spends VMs' budgets.
type Limiter struct {
	Store Counter
	// Factor multiplies every budget's calls (VM_CALL_BUDGET_FACTOR); 0
	// counts as 1.
	Factor int
	Now    func() time.Time
}

// Spend counts one call of route by vmID against b: nil while the VM is
// within it, 429 rate_limited with when to come back once it is spent, 503
// when the count cannot be kept (a call that cannot be counted is not
// served).
func (l *Limiter) Spend(ctx context.Context, vmID int64, route string, b Budget) error {
	if !b.Limited() {
		return nil
	}
	b.Calls *= max(l.Factor, 1)
	now := l.now()
	w, err := l.Store.CountCall(ctx, vmID, route, now, b.Per)
	if err != nil {
		return apperr.DatabaseUnavailable.Wrap(err)
	}
	if w.Calls <= b.Calls {
		return nil
	}
	e := apperr.RateLimited.Detailf("this VM made more than %d calls of this route in %s; retry later", b.Calls, b.Per)
	e.RetryAfter = w.Started.Add(b.Per).Sub(now)
	return e
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
