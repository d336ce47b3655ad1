package integration

import (
	"context"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// The running upgrade tells each node it retires (every worker and
// control-plane node not at its pass's version) its drain_timeout_seconds
// in the answer to the node's health report, from the upgrade's start: 45
// here. A new worker, at the pass's version, a worker and a control-plane
// node of another cluster, a control-plane node at the pass's version and
// a refused report are told nothing (the bundle's default), and so is every node once the
// upgrade is paused (it retires nothing then).
func TestUpgradeTellsTheNodesItRetiresItsDrainBound(t *testing.T) {
	a := stacktest.PinnedArtifacts()
	a.DigestFallback = true // v1.36.3's files are not in the shipped manifest yet
	s := newStack(t, withArtifacts(a))
	old, other := workerOn(t, s), workerOn(t, s)
	fresh := s.poolWorker(t, old, 1)
	cpVM := old.controlPlaneOf(t) // of the upgraded cluster (controlPlane() founds another)
	imds, access := s.VMCredentials(cpVM)
	cp := &worker{s: s, clusterID: old.clusterID, vmID: cpVM, imds: imds, access: access}
	elsewhere := old.controlPlane()
	ctx := context.Background()
	exec := func(q string) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE kube_nodes SET phase = 'ready', ready_at = now()`) // the upgrade's health gate
	told := func(n *worker, route string) string {
		t.Helper()
		r := s.VMCall(http.MethodPost, route, n.vmID, n.imds, n.access, map[string]string{
			bundle.WorkerHealthPathTemplate: workerHealthy, bundle.HealthPathTemplate: cpHealthy}[route])
		if r.Status != http.StatusNoContent {
			t.Fatalf("health report of vm %d = %d %s", n.vmID, r.Status, r.Body)
		}
		return r.Header.Get(bundle.DrainHeader)
	}
	if got := told(old, bundle.WorkerHealthPathTemplate); got != "" {
		t.Fatalf("before any upgrade a worker is told %q, want nothing", got)
	}
	up := stacktest.Do(t, http.MethodPost, s.APIURL+"/clusters/"+itoa(old.clusterID)+"/upgrade",
		`{"kubernetes_version":"v1.36.3","drain_timeout_seconds":45}`, s.Bearer(1))
	if up.Status != http.StatusAccepted {
		t.Fatalf("upgrade = %d %s", up.Status, up.Body)
	}
	// The pool's second worker is one a surge made, at the pass's version.
	exec(`UPDATE kube_nodes SET kubernetes_version = 'v1.36.3' WHERE vm_id = ` + itoa(fresh.vmID))

	if got := told(old, bundle.WorkerHealthPathTemplate); got != "45" {
		t.Errorf("the worker the upgrade retires is told %q, want 45", got)
	}
	if got := told(cp, bundle.HealthPathTemplate); got != "45" {
		t.Errorf("the control-plane node the upgrade replaces is told %q, want 45", got)
	}
	// It stands now for the new node that replaces it, at the pass's version.
	exec(`UPDATE kube_nodes SET kubernetes_version = 'v1.36.3' WHERE vm_id = ` + itoa(cp.vmID))
	for what, got := range map[string]string{
		"a new worker, at the pass's version":        told(fresh, bundle.WorkerHealthPathTemplate),
		"a worker of another cluster":                told(other, bundle.WorkerHealthPathTemplate),
		"a control-plane node at the pass's version": told(cp, bundle.HealthPathTemplate),
		"a control-plane node of another cluster":    told(elsewhere, bundle.HealthPathTemplate),
	} {
		if got != "" {
			t.Errorf("%s is told %q, want nothing (its bundle's default)", what, got)
		}
	}
	for what, r := range map[string]stacktest.Response{
		"another VM's proofs": s.VMCall(http.MethodPost, bundle.WorkerHealthPathTemplate, old.vmID, fresh.imds, fresh.access, workerHealthy),
		"a control-plane VM":  s.VMCall(http.MethodPost, bundle.WorkerHealthPathTemplate, elsewhere.vmID, elsewhere.imds, elsewhere.access, workerHealthy),
		"no IMDS session":     s.VMCall(http.MethodPost, bundle.WorkerHealthPathTemplate, old.vmID, "", old.access, workerHealthy),
	} {
		if r.Status < 400 || r.Header.Get(bundle.DrainHeader) != "" {
			t.Errorf("%s = %d with %s %q, want a refusal telling nothing", what, r.Status, bundle.DrainHeader, r.Header.Get(bundle.DrainHeader))
		}
	}

	exec(`UPDATE cluster_upgrades SET state = 'paused'`)
	if got := told(old, bundle.WorkerHealthPathTemplate); got != "" {
		t.Errorf("while the upgrade is paused the old worker is told %q, want nothing", got)
	}
}

// poolWorker is the worker at index i of the pool w belongs to, with its
// proofs.
func (s *stack) poolWorker(t *testing.T, w *worker, i int) *worker {
	t.Helper()
	var vmID int64
	if err := s.pool.QueryRow(context.Background(), `SELECT vm_id FROM kube_nodes WHERE kube_cluster_id = $1 AND role = 'worker'
		AND vm_id <> $2 ORDER BY ordinal OFFSET $3 LIMIT 1`, w.clusterID, w.vmID, i-1).Scan(&vmID); err != nil {
		t.Fatal(err)
	}
	imds, access := s.VMCredentials(vmID)
	return &worker{s: s, clusterID: w.clusterID, vmID: vmID, imds: imds, access: access}
}
