package faultinjection

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// reportedHealth records the nodes of vms as having reported their
// health, every check passing, at now+offset (as their timers do; the
// route is tested on its own). A report ahead of the reconciler's clock
// keeps a node healthy in every run of a test.
func (s *stack) reportedHealth(offset time.Duration, vms ...int64) {
	s.t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_nodes SET health_reported_at = now() + $2 * interval '1 second',
		health_checks = '{"kubelet":{"ok":true}}', health_failing_since = NULL WHERE vm_id = ANY($1)`, vms, offset.Seconds()); err != nil {
		s.t.Fatal(err)
	}
}

// remediations are the cluster's node.remediate events: outcome and reason.
func (s *stack) remediations() (outcomes, reasons []string) {
	s.t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT outcome, reason FROM audit_events WHERE action = 'node.remediate' ORDER BY id`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var o, r string
		if err := rows.Scan(&o, &r); err != nil {
			s.t.Fatal(err)
		}
		outcomes, reasons = append(outcomes, o), append(reasons, r)
	}
	return outcomes, reasons
}

// fresh keeps a node's last report ahead of every run's clock.
const fresh = 24 * time.Hour

// A control-plane node that stopped reporting is replaced by the
// reconciler by itself (nothing is asked of k8sapi), through the
// replacement path: the decision is in the trail with its reason, and the
// replacement is finished as one asked for by POST .../replace.
func TestDeadControlPlaneNodeIsReplacedAutomatically(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vms := res.ControlPlaneVMIDs
	s.markReady(vms...)
	s.reportedHealth(fresh, vms[1], vms[2])
	s.reportedHealth(0, vms[0]) // silent from now on
	if rep := s.reconcileAt(10 * time.Minute); rep.Remediated != 1 || rep.RemediationsRefused != 0 {
		t.Fatalf("reconciler report %+v, want one remediation", rep)
	}
	var old int64
	if err := s.pool.QueryRow(context.Background(), `SELECT old_vm_id FROM node_replacements`).Scan(&old); err != nil || old != vms[0] {
		t.Fatalf("replacement of VM %d (%v), want %d", old, err, vms[0])
	}
	outcomes, reasons := s.remediations()
	if len(outcomes) != 1 || outcomes[0] != "succeeded" || !strings.Contains(reasons[0], "is replaced: no health report since") {
		t.Errorf("trail %v %q, want one succeeded remediation saying why", outcomes, reasons)
	}
	if rep := s.finishReplacement(); rep.Replaced != 1 {
		t.Errorf("reconciler reports %+v, want the replacement done", rep)
	}
	s.assertReplaced(res.ClusterID, vms)
	s.assertSettled()
}

// ThreeWorkers is a pool of three: one dead worker is a third of it,
// under the default 40%.
var threeWorkers = strings.Replace(stacktest.TwoWorkers, `"count":2`, `"count":3`, 1)

// A dead worker's replacement cut off at its new VM's create is finished
// by the next run: the dead worker's VM deleted and its row removed, a new
// worker under a name no node had, the pool active with its three workers
// and no VM without a node.
func TestWorkerRemediationCutOffIsFinished(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.OneNode)
	pool := s.AddPool(1, res.ClusterID, threeWorkers)
	var workers []int64
	var names []string
	for _, w := range pool.Nodes {
		workers, names = append(workers, w.VMID), append(names, w.Name)
	}
	s.markReady(append(workers, res.ControlPlaneVMIDs...)...)
	s.reportedHealth(fresh, workers[1], workers[2], res.ControlPlaneVMIDs[0])
	s.reportedHealth(0, workers[0])
	s.cutOffReconciler(&s.vmCreates, 1) // the replacement's new VM
	if rep := s.reconcile(); rep.PoolsSettled != 1 {
		t.Errorf("reconciler report %+v, want the worker's replacement settled", rep)
	}
	s.assertPoolSettled("active", 3)
	s.assertSettled()
	var gone, newNames, count int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE vm_id = $1),
		count(*) FILTER (WHERE role = 'worker' AND node_name <> ALL($2)), (SELECT count FROM node_pools) FROM kube_nodes`,
		workers[0], names).Scan(&gone, &newNames, &count); err != nil || gone != 0 || newNames != 1 || count != 3 {
		t.Errorf("the dead worker's rows %d, new workers %d, pool count %d (%v); want 0, 1 and 3 (a replacement keeps the count)",
			gone, newNames, count, err)
	}
}

// Refusals are in the trail once per node and reason, not every run, and
// begin nothing: two of three control-plane nodes dead would lose quorum.
func TestRemediationRefusalIsInTheTrailOnce(t *testing.T) {
	s := newStack(t)
	vms := s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs
	s.markReady(vms...)
	s.reportedHealth(fresh, vms[2])
	s.reportedHealth(0, vms[0], vms[1])
	for range 2 {
		if rep := s.reconcile(); rep.Remediated != 0 || rep.RemediationsRefused != 2 {
			t.Errorf("reconciler report %+v, want two refusals", rep)
		}
	}
	outcomes, reasons := s.remediations()
	if len(outcomes) != 2 || outcomes[0] != "refused" || !strings.Contains(reasons[0], "quorum at risk: 1 of the 2 other control-plane nodes are healthy") {
		t.Errorf("trail %v %q, want two refusals for quorum", outcomes, reasons)
	}
	var replacements int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM node_replacements`).Scan(&replacements); err != nil || replacements != 0 {
		t.Errorf("%d replacements (%v), want none", replacements, err)
	}
}

// unhealthy_after "0" turns remediation off: a dead node stays.
func TestRemediationOff(t *testing.T) {
	s := newStack(t)
	vms := s.Found(1, strings.Replace(stacktest.ThreeNodes, "{", `{"unhealthy_after":"0",`, 1)).ControlPlaneVMIDs
	s.markReady(vms...)
	s.reportedHealth(fresh, vms[1], vms[2])
	s.reportedHealth(0, vms[0])
	if rep := s.reconcile(); rep.Remediated+rep.RemediationsRefused != 0 {
		t.Errorf("reconciler report %+v, want no decision", rep)
	}
}

// With the database down, a health report is a clean 503 and the
// reconciler's run fails without judging anyone; started again, the
// report is recorded.
func TestPostgresDownDuringHealthReports(t *testing.T) {
	s := newStack(t)
	vm := s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs[0]
	imds, access := s.VMCredentials(vm)
	report := func() stacktest.Response {
		return s.VMCall(http.MethodPost, bundle.HealthPathTemplate, vm, imds, access,
			`{"checks":{"kubelet":{"ok":true},"etcd":{"ok":true},"apiserver":{"ok":true}}}`)
	}
	reconciler := s.reconcilerAt(0) // its service token is issued while the database is up
	pg.Stop()
	if r := report(); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" {
		t.Errorf("while down = %d %s, want 503 database_unavailable", r.Status, r.Body)
	}
	if _, err := reconciler.Run(context.Background()); err == nil {
		t.Error("the reconciler's run with the database down reported no error")
	}
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := report(); r.Status != http.StatusNoContent {
		t.Errorf("after the restart = %d %s, want 204", r.Status, r.Body)
	}
}
