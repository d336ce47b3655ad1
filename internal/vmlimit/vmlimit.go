// Package vmlimit limits how often one VM may call each of its bootstrap
// routes. API Gateway's throttles are per route and shared by every VM, so
// one VM calling in a loop would starve the others and fill the fetch
// table; a budget per VM and route, counted in PostgreSQL (the functions
// are stateless and many), stops that one VM alone with 429 and
// Retry-After. The count travels with the proofs' token lookups (one
// round trip) and counts only calls whose two tokens name the path's VM,
// so no caller spends another VM's budget; a budget is judged only for a
// VM that passed the four proofs.
package vmlimit

import (
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
)

// Budget is how many calls of one route a VM may make per period. The zero
// Budget is no limit (the operator's routes).
type Budget struct {
	Calls int
	Per   time.Duration
}

// Limited reports whether b limits anything.
func (b Budget) Limited() bool { return b.Calls > 0 }

// Count is one call of Route to count at Now in windows of Per: what the
// VM's token lookup counts (store.VMCallLookup).
type Count struct {
	Route string
	Now   time.Time
	Per   time.Duration
}

// Window is one VM's calls of one route in the current fixed window, as
// counted.
type Window struct {
	Calls   int
	Started time.Time
}

// Limiter spends VMs' budgets. The count itself travels with the VM's
// token lookups (auth.Authenticator.ProveVM, one round trip): Call says
// what to count, Judge answers the count.
type Limiter struct {
	// Factor multiplies every budget's calls (VM_CALL_BUDGET_FACTOR); 0
	// counts as 1.
	Factor int
	Now    func() time.Time
}

// Call is the count of one call of route against b, nil when b limits
// nothing.
func (l *Limiter) Call(route string, b Budget) *Count {
	if !b.Limited() {
		return nil
	}
	return &Count{Route: route, Now: l.now(), Per: b.Per}
}

// Judge answers call, counted into w: nil while the VM is within b (or b
// limits nothing), 429 rate_limited with when to come back once it is
// spent, 500 when a limited call was not counted (a call that cannot be
// counted is not served).
func (l *Limiter) Judge(call *Count, w *Window, b Budget) error {
	if call == nil {
		return nil
	}
	if w == nil {
		return apperr.Internal.Wrap(errors.New("a proved VM's call was not counted"))
	}
	b.Calls *= max(l.Factor, 1)
	if w.Calls <= b.Calls {
		return nil
	}
	e := apperr.RateLimited.Detailf("this VM made more than %d calls of this route in %s; retry later", b.Calls, b.Per)
	e.RetryAfter = w.Started.Add(b.Per).Sub(call.Now)
	return e
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
