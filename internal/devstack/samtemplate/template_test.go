package samtemplate

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/devstack/devtest"
)

// projectRoot is the module root, where template.yaml is.
const projectRoot = "../../.."

// The project's template: the functions, their code, and their routes are
// what ARCHITECTURE.md lists, and every variable internal/config reads is
// declared for every function (so `sam local --env-vars` can set it).
func TestProjectTemplate(t *testing.T) {
	tmpl, err := LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"ClustersFunction": {"DELETE /clusters/{id}", "DELETE /clusters/{id}/node-pools/{pool}", "GET /catalog", "GET /clusters", "GET /clusters/{id}",
			"GET /clusters/{id}/etcd-snapshots", "GET /clusters/{id}/events", "GET /clusters/{id}/kubeconfigs", "GET /clusters/{id}/node-pools", "GET /clusters/{id}/node-pools/{pool}",
			"GET /clusters/{id}/nodes/{vm_id}/bootstrap", "GET /clusters/{id}/upgrade", "PATCH /clusters/{id}", "PATCH /clusters/{id}/node-pools/{pool}", "POST /clusters/{id}/etcd-snapshots",
			"POST /clusters/{id}/node-pools", "POST /clusters/{id}/nodes/{vm_id}/rebootstrap", "POST /clusters/{id}/nodes/{vm_id}/replace", "POST /clusters/{id}/rotate-ca", "POST /clusters/{id}/rotate-ca/abort", "POST /clusters/{id}/upgrade", "POST /clusters/{id}/upgrade/abort",
			"POST /clusters/{id}/upgrade/resume", "PUT /clusters/{id}/spec"},
		"CreateClusterFunction": {"POST /clusters", "POST /clusters/{id}/credentials", "POST /clusters/{id}/kubeconfig"},
		"GetBundleFunction": {"GET /bootstrap/control-plane/{vm_id}", "GET /bootstrap/control-plane/{vm_id}/addons", "GET /bootstrap/control-plane/{vm_id}/etcd-crl", "GET /bootstrap/control-plane/{vm_id}/etcd-membership", "GET /bootstrap/control-plane/{vm_id}/etcd-restore", "GET /bootstrap/control-plane/{vm_id}/etcd-snapshot",
			"GET /bootstrap/worker/{vm_id}", "POST /bootstrap/control-plane/{vm_id}/addons", "POST /bootstrap/control-plane/{vm_id}/etcd-membership", "POST /bootstrap/control-plane/{vm_id}/etcd-snapshot", "POST /bootstrap/control-plane/{vm_id}/health",
			"POST /bootstrap/control-plane/{vm_id}/renew", "POST /bootstrap/control-plane/{vm_id}/status", "POST /bootstrap/worker/{vm_id}/csr",
			"POST /bootstrap/worker/{vm_id}/health", "POST /bootstrap/worker/{vm_id}/renew", "POST /bootstrap/worker/{vm_id}/status"},
		"HealthFunction":     {"GET /docs", "GET /health", "GET /kubernetes-versions", "GET /openapi.json"},
		"ReconcilerFunction": nil, // a Schedule event, no route
	}
	if len(tmpl.Functions) != len(want) {
		t.Fatalf("%d functions, want %d", len(tmpl.Functions), len(want))
	}
	if len(dbroles.Functions) != len(want) {
		t.Errorf("dbroles names %d functions' database roles, want one per function (%d)", len(dbroles.Functions), len(want))
	}
	for _, f := range tmpl.Functions {
		if dbroles.Functions[f.LogicalID] == "" {
			t.Errorf("%s has no database role in dbroles.Functions", f.LogicalID)
		}
		var keys []string
		for _, r := range f.Routes {
			keys = append(keys, r.Key())
		}
		if !slices.Equal(keys, want[f.LogicalID]) {
			t.Errorf("%s routes %v, want %v", f.LogicalID, keys, want[f.LogicalID])
		}
		if !strings.HasPrefix(f.CodeURI, "functions/") {
			t.Errorf("%s CodeUri %q", f.LogicalID, f.CodeURI)
		}
		if len(f.Routes) > 0 && (f.Timeout <= 0 || f.Timeout > 30*time.Second) {
			t.Errorf("%s timeout %s: the HTTP API integration limit is 30 s", f.LogicalID, f.Timeout)
		}
		if (f.LogicalID == "ReconcilerFunction") != (f.Schedule == time.Minute) {
			t.Errorf("%s schedule %s: only the reconciler runs on one, every minute", f.LogicalID, f.Schedule)
		}
		for _, v := range config.Variables() {
			if _, ok := f.Env[v]; !ok {
				t.Errorf("%s does not declare %s", f.LogicalID, v)
			}
		}
	}
	// The deployment hook is built, not served, and reads the same variables.
	if len(tmpl.Hooks) != 1 || tmpl.Hooks[0].LogicalID != "MigrateFunction" || len(tmpl.Hooks[0].Routes) != 0 || tmpl.Hooks[0].Schedule != 0 {
		t.Errorf("deployment hooks %+v, want MigrateFunction alone, with no route or schedule", tmpl.Hooks)
	}
	for _, f := range tmpl.Hooks {
		for _, v := range config.Variables() {
			if _, ok := f.Env[v]; !ok {
				t.Errorf("%s does not declare %s", f.LogicalID, v)
			}
		}
	}
	h, _ := tmpl.Function("HealthFunction")
	if h.Env["BASE_DNS_DOMAIN"] != "k8s.excloud.co.in" || h.Env["KMS_KEY_ID"] != "" {
		t.Errorf("env resolution: BASE_DNS_DOMAIN=%q (parameter default) KMS_KEY_ID=%q (resource: unresolvable)", h.Env["BASE_DNS_DOMAIN"], h.Env["KMS_KEY_ID"])
	}
}

// template.yaml's parameter defaults are internal/config's defaults (which
// take the artifacts' from internal/bundle): a deployment that sets nothing
// runs what a local stack runs.
func TestTemplateDefaultsAreConfigDefaults(t *testing.T) {
	tmpl, err := LoadTemplate(filepath.Join(projectRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tmpl.Function("HealthFunction")
	for _, v := range []string{"KUBERNETES_VERSION", "ETCD_VERSION", "KUBE_DOWNLOAD_BASE", "IMAGE_REGISTRY"} {
		if h.Env[v] == "" {
			t.Errorf("template.yaml gives %s no default", v)
		}
	}
	fromTemplate, _ := config.FromLookup(func(k string) (string, bool) { v, ok := h.Env[k]; return v, ok })
	fromCode, _ := config.FromLookup(func(string) (string, bool) { return "", false })
	// The pool's shape is set per function on purpose (the health check's
	// shorter statement_timeout); internal/templaterules holds those values.
	fromTemplate.DB, fromCode.DB = config.DB{}, config.DB{}
	if !reflect.DeepEqual(fromTemplate, fromCode) {
		t.Errorf("template.yaml defaults %+v\nconfig defaults        %+v", fromTemplate, fromCode)
	}
}

func TestTemplateResolution(t *testing.T) {
	tmpl, err := LoadTemplate(devtest.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	f, ok := tmpl.Function("EchoFunction")
	if !ok || f.Timeout != 2*time.Second || f.Env["TEST_ENV"] != "hello" || f.Env["FROM_RESOURCE"] != "" {
		t.Fatalf("%+v", f)
	}
}

// Short-form tags become references wherever YAML puts them, and only
// tags do: a quoted "!Ref" is a literal.
func TestShortFormIntrinsics(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`
Parameters:
  P: {Type: String, Default: from-parameter}
  N: {Type: Number, Default: 5}
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Environment:
        Variables:
          REF: !Ref P # a comment
          REF_NUMBER: !Ref N
          QUOTED: "!Ref P"
          SUB: !Sub "${P}-x"
          GETATT: !GetAtt Key.Arn
          FLOW: {Inner: !Ref P}
          LITERAL: plain # !Ref P
          MISSING: !Ref Nope
`))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := tmpl.Function("F")
	want := map[string]string{"REF": "from-parameter", "REF_NUMBER": "5", "QUOTED": "!Ref P", "SUB": "", "GETATT": "",
		"FLOW": "", "LITERAL": "plain", "MISSING": ""}
	if !reflect.DeepEqual(f.Env, want) {
		t.Errorf("env %v\nwant %v", f.Env, want)
	}
}
