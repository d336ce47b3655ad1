package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
)

// The operator's and the VM's journey over the real stack, every response
// checked against the OpenAPI document by do (harness_test.go): here the
// test also proves the key responses were among those checked, and that
// every error body quotes the response's X-Request-Id.
func TestResponsesMatchTheContract(t *testing.T) {
	s := newStack(t)
	before := apidocstest.Checked()
	auth := s.bearer(1)
	body := `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3,"ssh_pubkey":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB test"}`
	headers := map[string]string{"Authorization": auth["Authorization"], "Idempotency-Key": "contract-1"}
	created := do(t, http.MethodPost, s.api.URL+"/clusters", body, headers)
	if created.Status != http.StatusCreated {
		t.Fatalf("POST /clusters = %d %s", created.Status, created.Body)
	}
	if replay := do(t, http.MethodPost, s.api.URL+"/clusters", body, headers); replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay = %d %s", replay.Status, replay.Header)
	}
	var res struct {
		ClusterID         int64   `json:"cluster_id"`
		ControlPlaneVMIDs []int64 `json:"control_plane_vm_ids"`
	}
	created.json(t, &res)
	id := itoa(res.ClusterID)

	do(t, http.MethodGet, s.api.URL+"/clusters", "", auth)
	do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", auth)
	imds, access := s.vmCredentials(res.ControlPlaneVMIDs[0])
	if b := s.fetchBundle(res.ControlPlaneVMIDs[0], imds, access); b.Status != http.StatusOK {
		t.Fatalf("bundle = %d %s", b.Status, b.Body)
	}

	// Errors, each quoting the request id.
	errs := []response{
		do(t, http.MethodPost, s.api.URL+"/clusters", `{"control_plane_count":9}`, auth),
		do(t, http.MethodPost, s.api.URL+"/clusters", strings.Replace(body, "3,", "1,", 1), headers),
		do(t, http.MethodPost, s.api.URL+"/clusters", body, map[string]string{"Authorization": "Bearer nope"}),
		do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", s.bearer(2)),
		do(t, http.MethodGet, s.api.URL+"/clusters/0x1", "", auth),
		s.fetchBundle(res.ControlPlaneVMIDs[1], imds, access),
		s.fetchBundle(res.ControlPlaneVMIDs[0], "", access),
	}
	// A cluster that is not active serves no bundle (409).
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET status = 'failed' WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	errs = append(errs, s.fetchBundle(res.ControlPlaneVMIDs[0], imds, access))
	do(t, http.MethodDelete, s.api.URL+"/clusters/"+id, "", auth)
	for _, r := range errs {
		var e struct {
			Error struct {
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		r.errorCode(t)
		r.json(t, &e)
		if e.Error.RequestID == "" || e.Error.RequestID != r.Header.Get("X-Request-Id") {
			t.Errorf("%d: request_id %q, X-Request-Id %q", r.Status, e.Error.RequestID, r.Header.Get("X-Request-Id"))
		}
	}

	after := apidocstest.Checked()
	for _, key := range []string{
		"createCluster 201", "listClusters 200", "getCluster 200", "deleteCluster 200", "getBundle 200",
		"createCluster 400", "createCluster 409", "createCluster 401", "getCluster 404", "getCluster 400",
		"getBundle 403", "getBundle 401", "getBundle 409",
	} {
		if after[key] <= before[key] {
			t.Errorf("%s was not checked against the document", key)
		}
	}
}
