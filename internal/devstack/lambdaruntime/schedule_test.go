package lambdaruntime

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// heldInvoker hands each invocation to the test and holds it until the test
// lets it go, noting whether two ever ran at once.
type heldInvoker struct {
	calls   chan []byte
	release chan struct{}

	mu           sync.Mutex
	inFlight     int
	overlapped   bool
	invokedAtAll bool
}

func newHeldInvoker() *heldInvoker {
	return &heldInvoker{calls: make(chan []byte), release: make(chan struct{})}
}

func (h *heldInvoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	h.mu.Lock()
	h.inFlight++
	h.invokedAtAll = true
	h.overlapped = h.overlapped || h.inFlight > 1
	h.mu.Unlock()
	defer func() { h.mu.Lock(); h.inFlight--; h.mu.Unlock() }()
	select {
	case h.calls <- payload:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []byte(`{}`), nil
}

// RunSchedules invokes only the functions with a Schedule event, with the
// EventBridge event a scheduled Lambda receives, one invocation at a time
// per function (a run still going delays the next), until ctx ends.
func TestRunSchedulesInvokesScheduledFunctionsOneAtATime(t *testing.T) {
	tmpl := &samtemplate.Template{Functions: []samtemplate.Function{
		{LogicalID: "ApiFunction", Routes: []samtemplate.Route{{Method: "GET", Path: "/x"}}},
		{LogicalID: "TickFunction", Schedule: 5 * time.Minute},
	}}
	tick, api := newHeldInvoker(), newHeldInvoker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A period far below the template's rate, as make local runs it.
	RunSchedules(ctx, tmpl, map[string]Invoker{"TickFunction": tick, "ApiFunction": api}, time.Millisecond, devtest.Logger(t))

	ids := map[string]bool{}
	for range 3 {
		var ev scheduledEvent
		if err := json.Unmarshal(<-tick.calls, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || ev.Region != localaws.LocalRegion || ev.ID == "" {
			t.Errorf("event %+v, want an EventBridge scheduled event", ev)
		}
		if _, err := time.Parse(time.RFC3339, ev.Time); err != nil {
			t.Errorf("event time %q: %v", ev.Time, err)
		}
		ids[ev.ID] = true
		tick.release <- struct{}{}
	}
	if len(ids) != 3 {
		t.Errorf("%d distinct event ids over 3 runs", len(ids))
	}
	cancel()
	tick.mu.Lock()
	defer tick.mu.Unlock()
	if tick.overlapped {
		t.Error("two scheduled invocations of one function ran at once")
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.invokedAtAll {
		t.Error("a function without a Schedule event was invoked")
	}
}
