package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const projectRoot = "../.."

// Every route of template.yaml has a sample event in events/, and every event
// is a valid payload 2.0 event for a route that exists, with the path
// parameters that route yields.
func TestEventsCoverEveryRoute(t *testing.T) {
	tmpl, err := LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRouter(tmpl)
	files, _ := filepath.Glob(filepath.Join(projectRoot, "events", "*.json"))
	covered := map[string]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		fn, route, params, ok := r.match(ev.RequestContext.HTTP.Method, ev.RawPath)
		switch {
		case ev.Version != "2.0":
			t.Errorf("%s: version %q", file, ev.Version)
		case !ok || route.Key() != ev.RouteKey || ev.RequestContext.RouteKey != ev.RouteKey:
			t.Errorf("%s: %s %s routes to %q, the event says %q", file, ev.RequestContext.HTTP.Method, ev.RawPath, route.Key(), ev.RouteKey)
		case !maps.Equal(params, ev.PathParameters) && len(params)+len(ev.PathParameters) > 0:
			t.Errorf("%s: pathParameters %v, the route yields %v", file, ev.PathParameters, params)
		case ev.RequestContext.HTTP.Path != ev.RawPath || ev.RequestContext.RequestID == "":
			t.Errorf("%s: requestContext inconsistent", file)
		default:
			covered[fn+" "+route.Key()] = true
		}
	}
	for _, f := range tmpl.Functions {
		for _, rt := range f.Routes {
			if !covered[f.LogicalID+" "+rt.Key()] {
				t.Errorf("no event in events/ for %s (%s)", rt.Key(), f.LogicalID)
			}
		}
	}
}

// Functions link neither Kubernetes (the e2e module's business) nor the
// local-only and test-only packages and their libraries.
func TestFunctionsDependencies(t *testing.T) {
	tmpl, err := LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"k8s.io/", "sigs.k8s.io/", "github.com/excloud/k8sapi/internal/devstack", "github.com/excloud/k8sapi/internal/simulator",
		"github.com/excloud/k8sapi/internal/testenv", "github.com/excloud/k8sapi/internal/stacktest",
		"github.com/excloud/k8sapi/internal/apidocs/apidocstest", "github.com/santhosh-tekuri/jsonschema", "go.yaml.in/yaml/v3"}
	for _, f := range append(tmpl.Functions, tmpl.Hooks...) {
		cmd := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "./"+f.CodeURI)
		cmd.Dir = projectRoot
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", f.CodeURI, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, bad := range forbidden {
				if strings.HasPrefix(pkg, bad) {
					t.Errorf("%s links %s", f.LogicalID, pkg)
				}
			}
		}
	}
}

// make invoke's path: the real HealthFunction binary, once, through the
// Runtime API, with the sample event.
func TestInvokeHealth(t *testing.T) {
	root, _ := filepath.Abs(projectRoot)
	var out bytes.Buffer
	err := Invoke(context.Background(), InvokeOptions{
		Root: root, Function: "HealthFunction", EventFile: filepath.Join(root, "events", "health.json"),
		Log: testLogger(t), Out: &out, FunctionOut: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if resp.StatusCode != 200 || strings.TrimSpace(resp.Body) != `{"status":"ok"}` {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Body)
	}
	if err := Invoke(context.Background(), InvokeOptions{Root: root, Function: "Nope", EventFile: "x", Log: testLogger(t), Out: &out}); err == nil || !strings.Contains(err.Error(), "HealthFunction") {
		t.Fatalf("unknown function: %v", err)
	}
}
