package lambdaruntime_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// echoFunction is devtest's EchoFunction as the template declares it.
func echoFunction(t *testing.T) samtemplate.Function {
	t.Helper()
	tmpl, err := samtemplate.LoadTemplate(devtest.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := tmpl.Function("EchoFunction")
	return fn
}

// startEcho runs the echo function in one Runner with env on top.
func startEcho(t *testing.T, env map[string]string) *lambdaruntime.Runner {
	t.Helper()
	spec := lambdaruntime.FunctionSpec{Function: echoFunction(t), Binary: devtest.Binary(t), Env: env}
	r, err := lambdaruntime.NewRunner(spec, devtest.Logger(t), devtest.Writer{T: t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// A function that cannot start reports a crash, not a hang.
func TestRunnerInitFailure(t *testing.T) {
	r := startEcho(t, map[string]string{"FAIL_INIT": "1"})
	_, err := r.Invoke(context.Background(), []byte(`{}`))
	if !errors.Is(err, lambdaruntime.ErrCrashed) {
		t.Fatalf("got %v, want ErrCrashed", err)
	}
}

// The Runtime API answers an unknown invocation id as Lambda does.
func TestRuntimeAPIRejectsUnknownInvocation(t *testing.T) {
	r := startEcho(t, nil)
	resp, err := http.Post("http://"+r.Addr()+"/2018-06-01/runtime/invocation/nope/response", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
