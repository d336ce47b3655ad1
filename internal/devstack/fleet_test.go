package devstack

import (
	"net/http/httptest"
	"testing"
	"time"
)

// A request to a function whose environment is busy runs at once in
// another, as Lambda runs it in another instance, instead of waiting.
func TestFleetRunsConcurrentRequestsConcurrently(t *testing.T) {
	tmpl, err := LoadTemplate("testdata/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := tmpl.Function("EchoFunction")
	log := testLogger(t)
	fleet := NewFleet(func() (*Runner, error) {
		return NewRunner(FunctionSpec{Function: fn, Binary: fixtureBinary(t)}, log, testWriter{t})
	}, 2)
	t.Cleanup(func() { closeAll(fleet.Runners()) })
	gw, err := NewGateway(tmpl, map[string]Invoker{"EchoFunction": fleet}, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	echo(t, srv.URL) // the first environment is warm
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		do(t, "GET", srv.URL+"/hang", nil) // holds its environment for the 2 s timeout
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	echo(t, srv.URL)
	if took := time.Since(start); took > time.Second {
		t.Errorf("a request beside a busy one took %s, want it run at once in another environment", took)
	}
	<-hung
	if n := len(fleet.Runners()); n != 2 {
		t.Errorf("%d environments, want 2", n)
	}
}
