package integration

import (
	"net/http"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/stacktest"
)

const (
	cpHealthy     = `{"checks":{"kubelet":{"ok":true},"etcd":{"ok":true},"apiserver":{"ok":true}}}`
	cpEtcdFailing = `{"checks":{"kubelet":{"ok":true},"etcd":{"ok":false,"message":"context deadline exceeded"},"apiserver":{"ok":true}}}`
	workerHealthy = `{"checks":{"kubelet":{"ok":true}}}`
)

// healthOf is the health GET /clusters/{id} shows for the node or worker
// whose VM is vmID.
func (w *worker) healthOf(t *testing.T, vmID int64) apitypes.NodeHealth {
	t.Helper()
	var c apitypes.ClusterView
	r := stacktest.Do(t, http.MethodGet, w.s.APIURL+"/clusters/"+itoa(w.clusterID), "", w.s.Bearer(1))
	r.JSON(t, &c)
	for _, n := range c.Nodes {
		if n.VMID == vmID {
			return n.NodeHealth
		}
	}
	for _, p := range c.NodePools {
		for _, n := range p.Nodes {
			if n.VMID == vmID {
				return n.NodeHealth
			}
		}
	}
	t.Fatalf("VM %d is no node of cluster %d: %s", vmID, w.clusterID, r.Body)
	return apitypes.NodeHealth{}
}

// controlPlaneOf is the VM of w's cluster's control-plane node.
func (w *worker) controlPlaneOf(t *testing.T) int64 {
	t.Helper()
	var c apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, w.s.APIURL+"/clusters/"+itoa(w.clusterID), "", w.s.Bearer(1)).JSON(t, &c)
	return c.ControlPlaneVMIDs[0]
}

// A node's reports move what GET /clusters/{id} shows: unknown before any,
// healthy while its checks pass, unhealthy since its first failing report
// (a later failing one keeps that time), healthy again, and unhealthy
// since its last report once it stops reporting for longer than the grace.
func TestHealthReportsAreShown(t *testing.T) {
	w := newWorker(t)
	cp := &worker{s: w.s, clusterID: w.clusterID, vmID: w.controlPlaneOf(t)}
	cp.imds, cp.access = w.s.VMCredentials(cp.vmID)
	if h := cp.healthOf(t, cp.vmID); h.Health != apitypes.HealthUnknown {
		t.Fatalf("before any report: %+v, want unknown", h)
	}
	report := func(n *worker, route, body string) {
		t.Helper()
		if r := w.s.VMCall(http.MethodPost, route, n.vmID, n.imds, n.access, body); r.Status != http.StatusNoContent {
			t.Fatalf("report %s = %d %s, want 204", body, r.Status, r.Body)
		}
	}
	report(cp, bundle.HealthPathTemplate, cpHealthy)
	if h := cp.healthOf(t, cp.vmID); h.Health != apitypes.Healthy || h.HealthReportedAt == nil || !h.HealthChecks["etcd"].OK {
		t.Errorf("after a healthy report: %+v", h)
	}
	report(cp, bundle.HealthPathTemplate, cpEtcdFailing)
	first := cp.healthOf(t, cp.vmID)
	w.s.clock.Advance(10 * time.Second)
	report(cp, bundle.HealthPathTemplate, cpEtcdFailing)
	h := cp.healthOf(t, cp.vmID)
	if h.Health != apitypes.Unhealthy || h.UnhealthySince == nil || !h.UnhealthySince.Equal(*first.UnhealthySince) ||
		h.UnhealthyReason != "failing: etcd context deadline exceeded" {
		t.Errorf("after two failing reports: %+v, want unhealthy since the first (%v)", h, first.UnhealthySince)
	}
	report(cp, bundle.HealthPathTemplate, cpHealthy)
	report(w, bundle.WorkerHealthPathTemplate, workerHealthy)
	if h := w.healthOf(t, w.vmID); h.Health != apitypes.Healthy {
		t.Errorf("the worker after its report: %+v", h)
	}
	w.s.clock.Advance(nodehealth.Grace + time.Second)
	if h := cp.healthOf(t, cp.vmID); h.Health != apitypes.Unhealthy || h.UnhealthyReason == "" {
		t.Errorf("silent past the grace: %+v, want unhealthy", h)
	}
}

// A report is refused, and records nothing, when it is not its role's, is
// malformed, or comes with another VM's proofs or an operator's token.
func TestHealthReportRefusals(t *testing.T) {
	w := newWorker(t)
	cp := w.controlPlane()
	vmReport := func(n *worker, route string, vmID int64, body string) stacktest.Response {
		return w.s.VMCall(http.MethodPost, route, vmID, n.imds, n.access, body)
	}
	refused(t, "a worker on the control plane's route", vmReport(w, bundle.HealthPathTemplate, w.vmID, cpHealthy),
		http.StatusNotFound, "not_found", "no control-plane node for this VM")
	refused(t, "a control-plane node on the worker's route", vmReport(cp, bundle.WorkerHealthPathTemplate, cp.vmID, workerHealthy),
		http.StatusNotFound, "not_found", "no worker for this VM")
	refused(t, "a worker's report naming etcd", vmReport(w, bundle.WorkerHealthPathTemplate, w.vmID, cpHealthy),
		http.StatusBadRequest, "invalid_request", "checks.apiserver: is no check of this node")
	refused(t, "a report without checks", vmReport(w, bundle.WorkerHealthPathTemplate, w.vmID, `{}`),
		http.StatusBadRequest, "invalid_request", "checks: is required")
	refused(t, "an unknown field", vmReport(w, bundle.WorkerHealthPathTemplate, w.vmID, `{"checks":{"kubelet":{"ok":true}},"x":1}`),
		http.StatusBadRequest, "invalid_field", "")
	refused(t, "another VM's report with this one's proofs", vmReport(w, bundle.HealthPathTemplate, cp.vmID, cpHealthy),
		http.StatusForbidden, "forbidden", "")
	operator := stacktest.Do(t, http.MethodPost, w.s.APIURL+"/bootstrap/worker/"+itoa(w.vmID)+"/health", workerHealthy, w.s.Bearer(1))
	refused(t, "an operator's token", operator, http.StatusUnauthorized, "unauthenticated", "")
	if h := w.healthOf(t, w.vmID); h.Health != apitypes.HealthUnknown {
		t.Errorf("after refused reports only: %+v, want unknown", h)
	}
}
