package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// Until its functions are up, the gateway's port answers 503 with the step
// the stack is at; then it routes.
func TestGatewayPortAnswers503UntilTheFunctionsAreUp(t *testing.T) {
	var s Starting
	srv := httptest.NewServer(&s)
	t.Cleanup(srv.Close)
	s.At("building functions")
	resp, b := do(t, "GET", srv.URL+"/health", nil)
	wantGatewayError(t, resp, b, http.StatusServiceUnavailable, "stack_starting")
	if !strings.Contains(string(b), "building functions") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 %s (Retry-After %q): want the step named and a Retry-After", b, resp.Header.Get("Retry-After"))
	}
	tmpl, err := samtemplate.LoadTemplate(devtest.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	gw, err := NewGateway(tmpl, map[string]lambdaruntime.Invoker{"EchoFunction": unusedInvoker{}}, devtest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.Ready(gw)
	resp, b = do(t, "GET", srv.URL+"/nope", nil)
	wantGatewayError(t, resp, b, http.StatusNotFound, "not_found")
}

type unusedInvoker struct{}

func (unusedInvoker) Invoke(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("not invoked in this test")
}
