package wiring

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/api"
)

// A burst of deep checks costs one ping per dependency per TTL, failures
// included; an abandoned ping is not remembered.
func TestCachedCheckBoundsPings(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	pings := 0
	var result error
	checks := cached([]api.Check{{Name: "postgres", Ping: func(context.Context) error { pings++; return result }}}, 30*time.Second, now)
	ping := checks[0].Ping
	if checks[0].Name != "postgres" {
		t.Fatalf("name %q", checks[0].Name)
	}

	for range 100 {
		if err := ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if pings != 1 {
		t.Fatalf("100 checks within the TTL made %d pings, want 1", pings)
	}

	clock = clock.Add(30 * time.Second)
	result = errors.New("connection refused")
	for range 10 {
		if err := ping(t.Context()); err == nil {
			t.Fatal("failure not reported")
		}
	}
	if pings != 2 {
		t.Fatalf("after the TTL: %d pings, want 2 (the failure cached)", pings)
	}

	clock = clock.Add(31 * time.Second)
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	_ = ping(canceled)
	result = nil
	if err := ping(t.Context()); err != nil || pings != 4 {
		t.Fatalf("after an abandoned ping: err %v, %d pings, want a fresh ping (4)", err, pings)
	}
}
