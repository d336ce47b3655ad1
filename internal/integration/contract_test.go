package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// The operator's and the VM's journey over the real stack, every response
// checked against the OpenAPI document by stacktest.Do: here the test also
// proves the key responses were among those checked, and that every error
// body quotes the response's X-Request-Id.
func TestResponsesMatchTheContract(t *testing.T) {
	s := newStack(t)
	before := apidocstest.Checked()
	auth := s.Bearer(1)
	body := `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3,"ssh_pubkey":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB test"}`
	headers := map[string]string{"Authorization": auth["Authorization"], "Idempotency-Key": "contract-1"}
	created := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", body, headers)
	if created.Status != http.StatusCreated {
		t.Fatalf("POST /clusters = %d %s", created.Status, created.Body)
	}
	if replay := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", body, headers); replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay = %d %s", replay.Status, replay.Header)
	}
	var res struct {
		ClusterID         int64   `json:"cluster_id"`
		ControlPlaneVMIDs []int64 `json:"control_plane_vm_ids"`
	}
	created.JSON(t, &res)
	id := itoa(res.ClusterID)

	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", auth)
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", auth)
	imds, access := s.VMCredentials(res.ControlPlaneVMIDs[0])
	if b := s.FetchBundle(res.ControlPlaneVMIDs[0], imds, access); b.Status != http.StatusOK {
		t.Fatalf("bundle = %d %s", b.Status, b.Body)
	}
	vm := vmProof{res.ControlPlaneVMIDs[0], imds, access}
	s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)

	// Errors, each quoting the request id.
	errs := []stacktest.Response{
		stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", `{"control_plane_count":9}`, auth),
		stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", strings.Replace(body, "3,", "1,", 1), headers),
		stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", body, map[string]string{"Authorization": "Bearer nope"}),
		stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", s.Bearer(2)),
		stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/0x1", "", auth),
		s.FetchBundle(res.ControlPlaneVMIDs[1], imds, access),
		s.FetchBundle(res.ControlPlaneVMIDs[0], "", access),
		s.report(vm, `{"phase":"booting"}`),
		s.report(vm, `{"phase":"etcd_started"}`),
	}
	// A cluster that is not active serves no bundle (409).
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET status = 'failed' WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	errs = append(errs, s.FetchBundle(res.ControlPlaneVMIDs[0], imds, access))
	stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+id, "", auth)
	for _, r := range errs {
		var e struct {
			Error struct {
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		r.ErrorCode(t)
		r.JSON(t, &e)
		if e.Error.RequestID == "" || e.Error.RequestID != r.Header.Get("X-Request-Id") {
			t.Errorf("%d: request_id %q, X-Request-Id %q", r.Status, e.Error.RequestID, r.Header.Get("X-Request-Id"))
		}
	}

	after := apidocstest.Checked()
	for _, key := range []string{
		"createCluster 201", "listClusters 200", "getCluster 200", "deleteCluster 200", "getBundle 200",
		"createCluster 400", "createCluster 409", "createCluster 401", "getCluster 404", "getCluster 400",
		"getBundle 403", "getBundle 401", "getBundle 409",
		"reportBootstrapStatus 204", "reportBootstrapStatus 400", "reportBootstrapStatus 409",
	} {
		if after[key] <= before[key] {
			t.Errorf("%s was not checked against the document", key)
		}
	}
}
