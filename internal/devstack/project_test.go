package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

const projectRoot = "../.."

// Functions link neither Kubernetes (the e2e module's business) nor the
// local-only and test-only packages and their libraries.
func TestFunctionsDependencies(t *testing.T) {
	tmpl, err := samtemplate.LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
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
		Log: devtest.Logger(t), Out: &out, FunctionOut: devtest.Writer{T: t},
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
	if err := Invoke(context.Background(), InvokeOptions{Root: root, Function: "Nope", EventFile: "x", Log: devtest.Logger(t), Out: &out}); err == nil || !strings.Contains(err.Error(), "HealthFunction") {
		t.Fatalf("unknown function: %v", err)
	}
}
