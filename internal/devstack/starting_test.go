package devstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Until its functions are up, the gateway's port answers 503 with the step
// the stack is at; then it routes.
func TestGatewayPortAnswers503UntilTheFunctionsAreUp(t *testing.T) {
	var s startingGateway
	srv := httptest.NewServer(&s)
	t.Cleanup(srv.Close)
	s.at("building functions")
	resp, b := do(t, "GET", srv.URL+"/health", nil)
	wantGatewayError(t, resp, b, http.StatusServiceUnavailable, "stack_starting")
	if !strings.Contains(string(b), "building functions") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 %s (Retry-After %q): want the step named and a Retry-After", b, resp.Header.Get("Retry-After"))
	}
	tmpl, err := LoadTemplate("testdata/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gw, err := NewGateway(tmpl, map[string]Invoker{"EchoFunction": unusedInvoker{}}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.ready(gw)
	resp, b = do(t, "GET", srv.URL+"/nope", nil)
	wantGatewayError(t, resp, b, http.StatusNotFound, "not_found")
}

type unusedInvoker struct{}

func (unusedInvoker) Invoke(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("not invoked in this test")
}

// A stack on another port gets its own database.
func TestEachPortHasItsOwnDatabase(t *testing.T) {
	if got := newBoot(Options{}).opt.Database; got != LocalDatabase {
		t.Errorf("port 3000: %q, want %q", got, LocalDatabase)
	}
	if got := newBoot(Options{Port: 3143}).opt.Database; got != LocalDatabase+"_3143" {
		t.Errorf("port 3143: %q", got)
	}
	if got := newBoot(Options{Port: 3143, Database: "mine"}).opt.Database; got != "mine" {
		t.Errorf("a named database: %q", got)
	}
}
