package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/artifacts"
)

// GET /kubernetes-versions answers the release table and the deployment's
// default, without a token (HealthFunction serves it, as it serves the
// API's own description).
func TestKubernetesVersionsListsTheReleaseTable(t *testing.T) {
	srv := &Server{DefaultKubernetesVersion: "v1.35.4"}
	rec := httptest.NewRecorder()
	srv.Handler(HealthFunction).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/kubernetes-versions", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /kubernetes-versions = %d %s", rec.Code, rec.Body)
	}
	var got apitypes.KubernetesVersions
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Default != "v1.35.4" || len(got.Versions) != len(artifacts.Releases()) {
		t.Fatalf("answer %+v", got)
	}
	for i, r := range artifacts.Releases() {
		v := got.Versions[i]
		if v.Version != r.Kubernetes || v.CoreDNSVersion != r.CoreDNS || v.PauseVersion != r.Pause || len(v.UpgradesTo) != len(r.UpgradesTo) {
			t.Errorf("version %d: %+v, release %+v", i, v, r)
		}
	}
}
