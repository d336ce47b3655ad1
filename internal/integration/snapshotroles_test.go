package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// readyWorkerBesideAnUnreadyControlPlane is issue 43's setting: a cluster
// whose one control-plane node is not Ready, and a worker of its pool
// that went through its own bootstrap to ready.
func readyWorkerBesideAnUnreadyControlPlane(t *testing.T, s *stack) *worker {
	t.Helper()
	w := workerOn(t, s)
	steps := []func() stacktest.Response{
		func() stacktest.Response { return w.fetchAs(w.vmID) },
		func() stacktest.Response { return w.signAs(w.vmID, w.ownCSRs(t)) },
		func() stacktest.Response { return w.reportAs(w.vmID, `{"phase":"kubelet_started"}`) },
		func() stacktest.Response { return w.reportAs(w.vmID, `{"phase":"ready"}`) },
	}
	for i, step := range steps {
		if r := step(); r.Status >= 300 {
			t.Fatalf("worker bootstrap step %d: %d %s", i, r.Status, r.Body)
		}
	}
	return w
}

// pendingSnapshotOf records, as the owner, a pending snapshot of cluster
// naming vm: what the choice recorded before it knew roles.
func (s *stack) pendingSnapshotOf(t *testing.T, cluster, vm int64) int64 {
	t.Helper()
	var id int64
	err := s.pool.QueryRow(context.Background(), `INSERT INTO etcd_snapshots (kube_cluster_id, trigger, requested_by, node_vm_id, requested_at)
		VALUES ($1, 'on_demand', 'org:1:test', $2, now()) RETURNING id`, cluster, vm).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// markUploaded makes snapshot id uploaded, as its report would have.
func (s *stack) markUploaded(t *testing.T, id int64) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE etcd_snapshots SET state = 'uploaded', size_bytes = 10,
		sha256 = $2, finished_at = now() WHERE id = $1`, id, strings.Repeat("a", 64)); err != nil {
		t.Fatal(err)
	}
}

// A Ready worker is never chosen, on demand or by the schedule, while the
// control plane is not Ready (it was: 202 naming the worker).
func TestWorkerIsNeverChosenForASnapshot(t *testing.T) {
	s, _ := snapshotStack(t)
	w := readyWorkerBesideAnUnreadyControlPlane(t, s)
	if r := s.takeSnapshot(1, w.clusterID); r.Status != http.StatusConflict || r.ErrorCode(t) != "no_ready_node" {
		t.Fatalf("on demand with only a worker Ready: %d %s, want 409 no_ready_node", r.Status, r.Body)
	}
	rep, err := s.schedule.Run(context.Background())
	if err != nil || rep.Scheduled != 0 || rep.NoNode != 1 {
		t.Fatalf("the schedule with only a worker Ready: %+v %v, want nothing scheduled, 1 without a node", rep, err)
	}
	if got := s.snapshots(1, w.clusterID); len(got) != 0 {
		t.Fatalf("snapshots recorded: %+v", got)
	}
}

// A worker named by a pending snapshot (as one recorded before the fix
// was) gets no upload URL and is not believed when it reports.
func TestWorkerGetsNoSnapshotURLAndIsNotBelieved(t *testing.T) {
	s, _ := snapshotStack(t)
	w := readyWorkerBesideAnUnreadyControlPlane(t, s)
	id := s.pendingSnapshotOf(t, w.clusterID, w.vmID)
	vm := vmProof{id: w.vmID, imds: w.imds, access: w.access}
	if r := s.askSnapshot(vm); r.Status != http.StatusNoContent {
		t.Fatalf("the worker asks for its snapshot's URL: %d %s, want 204", r.Status, r.Body)
	}
	rep := `{"id":` + itoa(id) + `,"error":"etcdctl: not found"}`
	if r := s.reportSnapshot(vm, rep); r.Status != http.StatusNotFound {
		t.Fatalf("the worker reports: %d %s, want 404", r.Status, r.Body)
	}
	if got := s.snapshots(1, w.clusterID); len(got) != 1 || got[0].State != "pending" {
		t.Fatalf("after the worker's report: %+v", got)
	}
}

// A control-plane node chosen while Ready and re-opened since (not Ready
// now) gets no URL and is not believed, until it is Ready again.
func TestReopenedNodeGetsNoSnapshotURL(t *testing.T) {
	s, _ := snapshotStack(t)
	id, vm := s.readyNode(t)
	var taken snapshotItem
	s.takeSnapshot(1, id).JSON(t, &taken)
	s.reopen(id, vm.id)
	if r := s.askSnapshot(vm); r.Status != http.StatusNoContent {
		t.Fatalf("a re-opened node asks: %d %s, want 204", r.Status, r.Body)
	}
	rep := `{"id":` + itoa(taken.ID) + `,"error":"etcdctl: not ready"}`
	if r := s.reportSnapshot(vm, rep); r.Status != http.StatusNotFound {
		t.Fatalf("a re-opened node reports: %d %s, want 404", r.Status, r.Body)
	}
}

// A restore takes only a snapshot a control-plane node of that cluster
// took: a worker's upload is 404 and founds nothing (it was 201).
func TestRestoreRefusesAWorkersSnapshot(t *testing.T) {
	s, _ := snapshotStack(t)
	w := readyWorkerBesideAnUnreadyControlPlane(t, s)
	id := s.pendingSnapshotOf(t, w.clusterID, w.vmID)
	s.markUploaded(t, id)
	before := s.countClusters(t)
	r := s.Create(1, restoreBody(w.clusterID, id))
	if r.Status != http.StatusNotFound || r.ErrorCode(t) != "not_found" {
		t.Fatalf("restore from a worker's snapshot: %d %s, want 404", r.Status, r.Body)
	}
	if after := s.countClusters(t); after != before {
		t.Fatalf("%d clusters after a refused restore, %d before", after, before)
	}
}
