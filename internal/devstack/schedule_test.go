package devstack

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

const scheduleTemplate = `
Resources:
  TickFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/tick
      Events:
        Every:
          Type: Schedule
          Properties:
            Schedule: rate(5 minutes)
  ApiFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/api
      Events:
        Get:
          Type: HttpApi
          Properties:
            Path: /x
            Method: get
`

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
	tmpl, err := ParseTemplate([]byte(scheduleTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := tmpl.Function("TickFunction"); f.Schedule != 5*time.Minute {
		t.Fatalf("TickFunction schedule %s, want 5m", f.Schedule)
	}
	tick, api := newHeldInvoker(), newHeldInvoker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A period far below the template's rate, as make local runs it.
	RunSchedules(ctx, tmpl, map[string]Invoker{"TickFunction": tick, "ApiFunction": api}, time.Millisecond, testLogger(t))

	ids := map[string]bool{}
	for range 3 {
		var ev scheduledEvent
		if err := json.Unmarshal(<-tick.calls, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || ev.Region != LocalRegion || ev.ID == "" {
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

// Only rate expressions have a period; anything else is refused with the
// function and event named.
func TestScheduleMustBeARate(t *testing.T) {
	for _, expr := range []string{"cron(0 * * * ? *)", "rate(0.5 minutes)", "rate(1 week)", ""} {
		bad := strings.Replace(scheduleTemplate, "rate(5 minutes)", expr, 1)
		_, err := ParseTemplate([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), "TickFunction.Events.Every") {
			t.Errorf("%q: %v, want an error naming TickFunction.Events.Every", expr, err)
		}
	}
	for expr, want := range map[string]time.Duration{"rate(1 minute)": time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour} {
		tmpl, err := ParseTemplate([]byte(strings.Replace(scheduleTemplate, "rate(5 minutes)", expr, 1)))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if f, _ := tmpl.Function("TickFunction"); f.Schedule != want {
			t.Errorf("%s = %s, want %s", expr, f.Schedule, want)
		}
	}
}
