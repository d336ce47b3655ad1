package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

// flowSchemas is a control-plane node's health report naming a deprecated
// API v1.36 removes, as its health script sends it.
const flowSchemas = `{"checks":{"kubelet":{"ok":true},"etcd":{"ok":true},"apiserver":{"ok":true}},"deprecated_apis":[` +
	`{"group":"flowcontrol.apiserver.k8s.io","version":"v1beta3","resource":"flowschemas","subresource":"","removed_release":"1.36"}]}`

// The deprecated APIs a control-plane node reports hold its cluster's
// upgrade: a non-dry-run upgrade is refused 409 upgrade_deprecated_apis
// naming the API, its removal and its node, and the plan's gate says the
// same. A report without them (its metrics could not be read) or with none
// keeps what was recorded; once the last report of the API is more than a
// day old it no longer holds, and a new one holds again;
// allow_deprecated_apis then begins the upgrade, recorded as overridden.
// GET /clusters/{id} shows the node's APIs of the last day.
// The stack's clock starts a day behind real time so the simulator's
// tokens stay live when it moves past the day.
func TestDeprecatedAPIReportsHoldTheUpgrade(t *testing.T) {
	a := stacktest.PinnedArtifacts()
	a.DigestFallback = true // v1.36.3's files are not in the shipped manifest yet
	c := newClock(time.Now().Add(-25 * time.Hour).Truncate(time.Second))
	s := newStack(t, withArtifacts(a), func(cfg *stacktest.Config) { cfg.Now = c.Now })
	res := s.Found(1, stacktest.OneNode)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.FetchBundle(vm.id, vm.imds, vm.access)
	s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	health := func(body string) {
		t.Helper()
		if r := s.VMCall(http.MethodPost, bundle.HealthPathTemplate, vm.id, vm.imds, vm.access, body); r.Status != http.StatusNoContent {
			t.Fatalf("health report %s = %d %s", body, r.Status, r.Body)
		}
	}
	upgrade := func(body string) stacktest.Response {
		t.Helper()
		return stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(res.ClusterID)+"/upgrade", body, s.Bearer(1))
	}
	named := "flowschemas flowcontrol.apiserver.k8s.io/v1beta3 (removed in 1.36, served by "
	held := func(when string) {
		t.Helper()
		r := upgrade(`{"kubernetes_version":"v1.36.3"}`)
		if r.Status != http.StatusConflict || r.ErrorCode(t) != "upgrade_deprecated_apis" || !strings.Contains(string(r.Body), named) {
			t.Fatalf("%s: upgrade = %d %s, want 409 upgrade_deprecated_apis naming the API", when, r.Status, r.Body)
		}
	}
	gate := func() apitypes.UpgradeGate {
		t.Helper()
		var dry apitypes.UpgradeAnswer
		upgrade(`{"kubernetes_version":"v1.36.3","dry_run":true}`).JSON(t, &dry)
		for _, g := range dry.Plan.Gates {
			if g.Name == "deprecated_apis" {
				return g
			}
		}
		t.Fatalf("no deprecated_apis gate in the plan %+v", dry.Plan)
		return apitypes.UpgradeGate{}
	}

	shown := func() []apitypes.RequestedAPI {
		t.Helper()
		var v apitypes.ClusterView
		stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", s.Bearer(1)).JSON(t, &v)
		return v.Nodes[0].DeprecatedAPIs
	}

	health(flowSchemas)
	reportedAt := c.Now()
	held("reported")
	if g := gate(); g.Passed || !strings.Contains(g.Detail, named) {
		t.Errorf("the plan's gate: %+v, want failed naming the API and its removal", g)
	}
	if got := shown(); len(got) != 1 || got[0].Name() != "flowschemas flowcontrol.apiserver.k8s.io/v1beta3" ||
		got[0].RemovedRelease != "1.36" || !got[0].LastSeen.Equal(reportedAt) {
		t.Errorf("GET /clusters/{id} shows %+v, want flowschemas last seen %v", got, reportedAt)
	}
	health(cpHealthy)
	held("after a report without deprecated_apis")
	health(`{"checks":{"kubelet":{"ok":true},"etcd":{"ok":true},"apiserver":{"ok":true}},"deprecated_apis":[]}`)
	held("after a report of none, within the day")

	c.Set(store.DeprecatedAPIsWithin + time.Second)
	if g := gate(); !g.Passed {
		t.Errorf("a day after the last report of it: %+v, want passed", g)
	}
	if got := shown(); len(got) != 0 {
		t.Errorf("a day after: GET /clusters/{id} shows %+v, want none", got)
	}
	health(flowSchemas)
	held("reported again")
	var answer apitypes.UpgradeAnswer
	r := upgrade(`{"kubernetes_version":"v1.36.3","allow_deprecated_apis":true}`)
	r.JSON(t, &answer)
	if r.Status != http.StatusAccepted || answer.Upgrade == nil || !answer.Upgrade.DeprecatedAPIsOverridden {
		t.Fatalf("overridden = %d %s", r.Status, r.Body)
	}
	var u apitypes.Upgrade
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID)+"/upgrade", "", s.Bearer(1)).JSON(t, &u)
	if !u.DeprecatedAPIsOverridden {
		t.Errorf("GET .../upgrade: %+v, want deprecated_apis_overridden", u)
	}
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events
		WHERE action = 'cluster.upgrade_deprecated_apis_overridden' AND outcome = 'succeeded'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d trail events of the override (%v), want 1", n, err)
	}
}

// A report's deprecated APIs beyond their bounds are refused 400 naming
// every problem, and nothing of the report is recorded; a worker's report
// may not name any.
func TestDeprecatedAPIReportRefusals(t *testing.T) {
	w := newWorker(t)
	cp := w.controlPlane()
	long := strings.Replace(flowSchemas, `"flowschemas"`, `"`+strings.Repeat("f", 64)+`"`, 1)
	r := w.s.VMCall(http.MethodPost, bundle.HealthPathTemplate, cp.vmID, cp.imds, cp.access, long)
	refused(t, "a resource of 64 bytes", r, http.StatusBadRequest, "invalid_request", "deprecated_apis[0].resource: must be 1 to 63 bytes")
	var reported *time.Time
	if err := w.s.pool.QueryRow(t.Context(), `SELECT health_reported_at FROM kube_nodes WHERE vm_id = $1`, cp.vmID).Scan(&reported); err != nil || reported != nil {
		t.Errorf("after a refused report: health_reported_at %v (%v), want none", reported, err)
	}
	r = w.s.VMCall(http.MethodPost, bundle.WorkerHealthPathTemplate, w.vmID, w.imds, w.access, `{"checks":{"kubelet":{"ok":true}},"deprecated_apis":[]}`)
	refused(t, "a worker's", r, http.StatusBadRequest, "invalid_request", "deprecated_apis: is a control-plane node's only")
}
