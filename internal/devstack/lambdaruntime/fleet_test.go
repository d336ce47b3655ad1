package lambdaruntime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
)

// A request to a function whose environment is busy runs at once in
// another, as Lambda runs it in another instance, instead of waiting.
func TestFleetRunsConcurrentRequestsConcurrently(t *testing.T) {
	fn := echoFunction(t)
	log := devtest.Logger(t)
	fleet := lambdaruntime.NewFleet(func() (*lambdaruntime.Runner, error) {
		return lambdaruntime.NewRunner(lambdaruntime.FunctionSpec{Function: fn, Binary: devtest.Binary(t)}, log, devtest.Writer{T: t})
	}, 2)
	t.Cleanup(func() { lambdaruntime.CloseAll(fleet.Runners()) })
	invokeGet(t, fleet, "/echo/x") // the first environment is warm
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		// holds its environment for the 2 s timeout
		_, _ = fleet.Invoke(context.Background(), getEvent(t, "/hang"))
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	invokeGet(t, fleet, "/echo/x")
	if took := time.Since(start); took > time.Second {
		t.Errorf("a request beside a busy one took %s, want it run at once in another environment", took)
	}
	<-hung
	if n := len(fleet.Runners()); n != 2 {
		t.Errorf("%d environments, want 2", n)
	}
}

// getEvent is the payload 2.0 event of a GET of path, as the gateway sends it.
func getEvent(t *testing.T, path string) []byte {
	t.Helper()
	b, err := json.Marshal(events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "GET " + path, RawPath: path,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: lambdaruntime.NewRequestID(),
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// invokeGet invokes a GET of path and wants a 200.
func invokeGet(t *testing.T, inv lambdaruntime.Invoker, path string) {
	t.Helper()
	out, err := inv.Invoke(context.Background(), getEvent(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s (%v)", path, out, err)
	}
}
