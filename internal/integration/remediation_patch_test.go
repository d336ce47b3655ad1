package integration

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

// patchCluster is PATCH /clusters/{id} with body as org's operator.
func (s *stack) patchCluster(org, id int64, body string) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodPatch, s.api.URL+"/clusters/"+itoa(id), body, s.Bearer(org))
}

// judged: the remediation sweep would judge cluster id now (it reads the
// cluster's settings on every sweep).
func (s *stack) judged(t *testing.T, id int64) bool {
	t.Helper()
	refs, err := store.New(s.pool).RemediationCandidates(context.Background(), s.clock.Now().Add(-nodehealth.Grace))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(refs, store.ClusterRef{OrgID: 1, ID: id})
}

// A cluster founded with remediation off has it turned on by PATCH: GET
// shows the new settings, the next sweep judges its failing node, the
// trail says what changed; PATCH "0" turns it off again.
func TestPatchTurnsRemediationOnAndOff(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, strings.TrimSuffix(stacktest.OneNode, "}")+`,"unhealthy_after":"0"}`)
	id, vm := res.ClusterID, res.ControlPlaneVMIDs[0]
	s.bootAll(t, res.ControlPlaneVMIDs)
	p := s.proof(vm)
	if r := s.VMCall(http.MethodPost, bundle.HealthPathTemplate, vm, p.imds, p.access, cpEtcdFailing); r.Status != http.StatusNoContent {
		t.Fatalf("health report = %d %s", r.Status, r.Body)
	}
	if s.judged(t, id) {
		t.Fatal("remediation off, yet the sweep judges the cluster")
	}
	r := s.patchCluster(1, id, `{"unhealthy_after":"1m"}`)
	var v apitypes.ClusterView
	r.JSON(t, &v)
	if r.Status != http.StatusOK || v.ID != id || v.UnhealthyAfter != "1m0s" || v.MaxUnhealthyPercent != 40 || v.ControlPlaneCount != 1 {
		t.Fatalf("PATCH unhealthy_after 1m = %d %s", r.Status, r.Body)
	}
	if got := s.getCluster(t, id); got.UnhealthyAfter != "1m0s" {
		t.Errorf("GET after the PATCH: unhealthy_after %q", got.UnhealthyAfter)
	}
	if !s.judged(t, id) {
		t.Error("remediation on, yet the sweep does not judge the cluster's failing node")
	}
	if e := s.auditEvents(1, id)[0]; e.Action != "cluster.set_remediation" || e.Reason != "unhealthy_after 0s → 1m0s" || e.Status != 200 {
		t.Errorf("the trail's newest event: %+v", e)
	}
	if r := s.patchCluster(1, id, `{"unhealthy_after":"0","max_unhealthy_percent":25}`); r.Status != http.StatusOK {
		t.Fatalf("PATCH unhealthy_after 0 = %d %s", r.Status, r.Body)
	}
	if got := s.getCluster(t, id); got.UnhealthyAfter != "0s" || got.MaxUnhealthyPercent != 25 || s.judged(t, id) {
		t.Errorf("after PATCH 0: %q %d%%, judged %v", got.UnhealthyAfter, got.MaxUnhealthyPercent, s.judged(t, id))
	}
	if e := s.auditEvents(1, id)[0]; e.Reason != "unhealthy_after 1m0s → 0s, max_unhealthy_percent 40 → 25" {
		t.Errorf("the trail's newest event: %+v", e)
	}
}

// A patch is refused, with nothing changed, when it names no field, a
// setting POST /clusters would refuse, or a count it refuses beside a
// valid setting; another org's cluster is not found; a refused scaling
// leaves the settings given beside it unchanged; a scaling with settings
// changes both under the route's action.
func TestPatchRemediationRefusals(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.OneNode)
	id := res.ClusterID
	s.bootAll(t, res.ControlPlaneVMIDs)
	refused(t, "an empty body", s.patchCluster(1, id, `{}`), http.StatusBadRequest, "invalid_request",
		"body: must give control_plane_count, unhealthy_after or max_unhealthy_percent")
	refused(t, "30s", s.patchCluster(1, id, `{"unhealthy_after":"30s"}`), http.StatusBadRequest, "invalid_request", "unhealthy_after: must be")
	refused(t, "101%", s.patchCluster(1, id, `{"max_unhealthy_percent":101}`), http.StatusBadRequest, "invalid_request",
		"max_unhealthy_percent: must be 0 to 100")
	refused(t, "a count of 2 with a setting", s.patchCluster(1, id, `{"control_plane_count":2,"unhealthy_after":"1m"}`),
		http.StatusUnprocessableEntity, "invalid_control_plane_count", "")
	refused(t, "another org's cluster", s.patchCluster(2, id, `{"unhealthy_after":"1m"}`), http.StatusNotFound, "not_found", "")
	refused(t, "the count it has, with a setting", s.patchCluster(1, id, `{"control_plane_count":1,"unhealthy_after":"1m"}`),
		http.StatusConflict, "control_plane_unchanged", "")
	if got := s.getCluster(t, id); got.UnhealthyAfter != "5m0s" || got.MaxUnhealthyPercent != 40 {
		t.Fatalf("after refused patches: %q %d%%, want the defaults", got.UnhealthyAfter, got.MaxUnhealthyPercent)
	}
	if r := s.patchCluster(1, id, `{"control_plane_count":3,"max_unhealthy_percent":30}`); r.Status != http.StatusAccepted {
		t.Fatalf("scale with a setting = %d %s", r.Status, r.Body)
	}
	if got := s.getCluster(t, id); got.ControlPlaneCount != 3 || got.MaxUnhealthyPercent != 30 {
		t.Errorf("after scaling with a setting: %d nodes, %d%%", got.ControlPlaneCount, got.MaxUnhealthyPercent)
	}
	if e := s.auditEvents(1, id)[0]; e.Action != "cluster.scale_control_plane" || e.Reason != "max_unhealthy_percent 40 → 30" {
		t.Errorf("the trail's newest event: %+v", e)
	}
}

// A deleted cluster's settings are refused as its scaling is.
func TestPatchRemediationOfADeletedCluster(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1)); r.Status >= 300 {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	scale := s.patchCluster(1, id, `{"control_plane_count":3}`)
	settings := s.patchCluster(1, id, `{"unhealthy_after":"1m"}`)
	if settings.Status != scale.Status || scale.Status < 400 || !strings.Contains(string(settings.Body), "cluster_not_active") {
		t.Errorf("settings = %d %s; scaling = %d %s", settings.Status, settings.Body, scale.Status, scale.Body)
	}
}

// The CLI sets the settings through the route, each as its own function's
// database user.
func TestCLISetsRemediation(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	code, out, errOut := s.k8sapiCLI("set", "remediation", itoa(id), "--unhealthy-after", "0")
	if code != 0 || out != "remediation of cluster "+itoa(id)+": off (unhealthy_after 0)\n" {
		t.Fatalf("set remediation: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = s.k8sapiCLI("set", "remediation", itoa(id), "--max-unhealthy-percent", "101")
	if code != 1 || !strings.Contains(errOut, "max_unhealthy_percent: must be 0 to 100") {
		t.Fatalf("set 101%%: exit %d\n%s", code, errOut)
	}
	if got := s.getCluster(t, id); got.UnhealthyAfter != "0s" || got.MaxUnhealthyPercent != 40 {
		t.Errorf("after the CLI: %q %d%%", got.UnhealthyAfter, got.MaxUnhealthyPercent)
	}
}
