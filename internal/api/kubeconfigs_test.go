package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/store"
)

// The document's ttl (default and bounds) and the record's length are the
// code's, and its body schema takes what the code takes.
func TestOpenAPIKubeconfigMatchesTheCode(t *testing.T) {
	ttl := prop(t, "KubeconfigRequest", "ttl")
	for key, want := range map[string]time.Duration{
		"default": adminkubeconfig.DefaultKubeconfigTTL, "x-minimum": adminkubeconfig.MinKubeconfigTTL, "x-maximum": adminkubeconfig.MaxKubeconfigTTL,
	} {
		s, _ := ttl[key].(string)
		if got, err := time.ParseDuration(s); err != nil || got != want {
			t.Errorf("ttl %s = %q in the document, %v in the code", key, s, want)
		}
	}
	if got := numberOf(t, prop(t, "KubeconfigIssueList", "kubeconfigs"), "maxItems"); got != store.MaxKubeconfigIssuesShown {
		t.Errorf("kubeconfigs maxItems %d, code %d", got, store.MaxKubeconfigIssuesShown)
	}
	issue, _ := apidocstest.Find("POST", "/clusters/1/kubeconfig")
	body := issue.Op["requestBody"].(map[string]any)
	if body["required"] != false {
		t.Error("the body of POST /clusters/{id}/kubeconfig must be optional")
	}
	if got := numberOf(t, body, "x-max-body-bytes"); got != MaxBodyBytes {
		t.Errorf("x-max-body-bytes = %d, MaxBodyBytes = %d", got, MaxBodyBytes)
	}
	// What the document accepts the code accepts; what its schema refuses
	// the code refuses (the bounds the schema cannot say are the code's).
	schema := apidocstest.SchemaRef("KubeconfigRequest")
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{}`, true},
		{`{"ttl":"12h"}`, true},
		{`{"ttl":"5m"}`, true},
		{`{"ttl":"168h"}`, true},
		{`{"ttl":"1h30m"}`, true},
		{`{"ttl":"12"}`, false},
		{`{"ttl":"7d"}`, false},
		{`{"ttl":12}`, false},
		{`{"ttl":"1h","x":1}`, false},
	} {
		docOK := apidocstest.ValidateJSON(schema, []byte(c.body)) == nil
		var req adminkubeconfig.KubeconfigRequest
		codeOK := json.Unmarshal([]byte(c.body), &req) == nil
		if codeOK {
			_, err := req.Lifetime()
			codeOK = err == nil && !hasUnknownField(c.body)
		}
		if docOK != c.ok || codeOK != c.ok {
			t.Errorf("%s: document accepts %v, code accepts %v, want %v", c.body, docOK, codeOK, c.ok)
		}
	}
	ex := body["content"].(map[string]any)["application/json"].(map[string]any)["example"]
	exJSON, _ := json.Marshal(ex)
	if err := apidocstest.ValidateJSON(schema, exJSON); err != nil {
		t.Errorf("example: %v", err)
	}
}

// hasUnknownField: the handler's decoder refuses fields the request lacks.
func hasUnknownField(body string) bool {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	for k := range m {
		if k != "ttl" {
			return true
		}
	}
	return false
}
