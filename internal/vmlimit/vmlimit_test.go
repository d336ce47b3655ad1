package vmlimit

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := &Limiter{Factor: 2, Now: func() time.Time { return now }}
	b := Budget{Calls: 3, Per: 10 * time.Minute}
	if l.Call("GET /x", Budget{}) != nil {
		t.Fatal("a route without a budget counts calls")
	}
	call := l.Call("GET /x", b)
	if call == nil || call.Route != "GET /x" || !call.Now.Equal(now) || call.Per != b.Per {
		t.Fatalf("call %+v", call)
	}
	started := now.Add(-4 * time.Minute)
	if err := l.Judge(call, &Window{Calls: 6, Started: started}, b); err != nil {
		t.Errorf("the 6th call of 3 × factor 2: %v", err)
	}
	err := l.Judge(call, &Window{Calls: 7, Started: started}, b)
	e, ok := apperr.As(err)
	if !ok || e.RetryAfter != 6*time.Minute || e.Code != apperr.RateLimited {
		t.Errorf("the 7th call: %+v, want rate_limited, retry after 6m", e)
	}
	if e, ok := apperr.As(l.Judge(call, nil, b)); !ok || e.Code != apperr.Internal {
		t.Errorf("a limited call not counted: %v, want internal", e)
	}
	if err := l.Judge(nil, nil, Budget{}); err != nil {
		t.Errorf("no budget: %v", err)
	}
}
