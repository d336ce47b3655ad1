package faultinjection

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// shrinking founds a three-node cluster whose nodes reported ready and
// asks for one control-plane node: 202.
func (s *stack) shrinking() (clusterID int64, vms []int64) {
	s.t.Helper()
	res := s.Found(1, stacktest.ThreeNodes)
	s.markReady(res.ControlPlaneVMIDs...)
	if r := s.scale(res.ClusterID, `{"control_plane_count":1}`); r.Status != http.StatusAccepted {
		s.t.Fatalf("scale = %d %s, want 202", r.Status, r.Body)
	}
	return res.ClusterID, res.ControlPlaneVMIDs
}

// leaving is the names of the retiring control-plane nodes.
func (s *stack) leaving() []string {
	s.t.Helper()
	var names []string
	if err := s.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(node_name ORDER BY ordinal), '{}') FROM kube_nodes
		WHERE role = 'control-plane' AND retiring`).Scan(&names); err != nil {
		s.t.Fatal(err)
	}
	return names
}

// reportRemoved records the etcd removal of the retiring nodes as a
// member that stays reports it (internal/integration calls the route).
func (s *stack) reportRemoved() {
	s.t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_nodes SET etcd_removed_at = now(), etcd_removed_by = 0
		WHERE role = 'control-plane' AND retiring`); err != nil {
		s.t.Fatal(err)
	}
}

// finishShrinking runs the reconciler, reporting each leaving member
// removed, until the scaling is no longer in progress (at most eight
// runs); never more than one member leaves at once.
func (s *stack) finishShrinking() reconciler.Report {
	s.t.Helper()
	var sum reconciler.Report
	for range 8 {
		rep := s.reconcile()
		sum.Scaled += rep.Scaled
		sum.ScalingsFailed += rep.ScalingsFailed
		if rep.Scaled+rep.ScalingsFailed > 0 {
			return sum
		}
		if n := len(s.leaving()); n > 1 {
			s.t.Fatalf("%d members leaving at once, want one at a time", n)
		}
		s.reportRemoved()
	}
	return sum
}

// assertShrunk: the scaling is done; the cluster has want control-plane
// nodes, none retiring, its count want, want VMs live of the three
// created, and the retired members' etcd serials on the CRL.
func (s *stack) assertShrunk(id int64, want int) {
	s.t.Helper()
	state, reason, nodes, count, err := s.scalingEnd(id)
	if err != nil || state != "done" || nodes != want || count != want || len(s.leaving()) != 0 {
		s.t.Errorf("scaling %q (%q), %d nodes, count %d, leaving %v (%v); want done, %d, %d, none", state, reason, nodes, count, s.leaving(), err, want, want)
	}
	if _, _, created, live := s.counts(); created != 3 || live != want {
		s.t.Errorf("%d VMs created, %d live; want 3 and %d", created, live, want)
	}
	var revoked int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(DISTINCT node_name) FROM etcd_revocations WHERE kube_cluster_id = $1`, id).
		Scan(&revoked); err != nil || revoked != 3-want {
		s.t.Errorf("%d retired members on the etcd CRL (%v), want %d", revoked, err, 3-want)
	}
}

// 3 → 1, one member at a time: the highest ordinal leaves first; its VM
// and its row stay until a member that stays reported its etcd removal.
func TestScalingDownRemovesOneMemberAtATime(t *testing.T) {
	s := newStack(t)
	id, _ := s.shrinking()
	if rep := s.reconcile(); rep.ScalingsWaiting != 1 {
		_, reason, _, _, _ := s.scalingEnd(id)
		t.Fatalf("reconciler report %+v (%q), want the scaling waiting for the removal's report", rep, reason)
	}
	if got := s.leaving(); len(got) != 1 || !strings.HasPrefix(got[0], "cp-3.") {
		t.Fatalf("leaving %v, want cp-3 alone", got)
	}
	s.reconcile() // nothing reported: nothing deleted
	if _, nodes, _, live := s.counts(); nodes != 3 || live != 3 {
		t.Fatalf("%d nodes, %d VMs live before the removal was reported, want 3 and 3", nodes, live)
	}
	s.reportRemoved()
	s.reconcile()
	if got := s.leaving(); len(got) != 1 || !strings.HasPrefix(got[0], "cp-2.") {
		t.Fatalf("leaving %v after cp-3's removal, want cp-2", got)
	}
	if rep := s.finishShrinking(); rep.Scaled != 1 {
		t.Errorf("reconciler reports %+v, want one scaling done", rep)
	}
	s.assertShrunk(id, 1)
	s.assertSettled()
}

// A shrink whose run is cut off at the leaving VM's deletion is finished
// by the next runs: no VM without a node, no node without its VM.
func TestScalingDownCutOffAtTheVMDeleteIsFinished(t *testing.T) {
	s := newStack(t)
	id, _ := s.shrinking()
	s.reconcile()
	s.reportRemoved()
	s.cutOffReconciler(&s.vmDeletes, 1)
	if rep := s.finishShrinking(); rep.Scaled != 1 {
		t.Errorf("reconciler reports %+v, want one scaling done", rep)
	}
	s.assertShrunk(id, 1)
	s.assertSettled()
}

// A leaving member whose removal no member that stays reports within the
// hour is kept (its VM and its member): no longer retiring, the scaling
// failed with the reason, the count what the cluster has.
func TestScalingDownWhoseRemovalIsNeverReportedKeepsTheMember(t *testing.T) {
	s := newStack(t)
	id, _ := s.shrinking()
	var failed int
	for range 8 { // ten minutes later each: past the hour
		failed += s.reconcile().ScalingsFailed
	}
	state, reason, nodes, count, err := s.scalingEnd(id)
	if failed != 1 || err != nil || state != "failed" || !strings.Contains(reason, "reported the etcd removal") || nodes != 3 || count != 3 || len(s.leaving()) != 0 {
		t.Errorf("%d failed; scaling %q (%q), %d nodes, count %d, leaving %v (%v); want failed, 3 kept, count 3, none leaving",
			failed, state, reason, nodes, count, s.leaving(), err)
	}
	if _, _, _, live := s.counts(); live != 3 {
		t.Errorf("%d VMs live, want 3", live)
	}
}

// A shrink that could lose the quorum is refused (409 would_lose_quorum)
// with nothing written: two of three not ready, or from two members to
// one the leaving one not ready.
func TestScalingDownRefusedWithoutQuorum(t *testing.T) {
	s := newStack(t)
	three := s.Found(1, stacktest.ThreeNodes)
	s.markReady(three.ControlPlaneVMIDs[0])
	s.assertRefused(s.scale(three.ClusterID, `{"control_plane_count":1}`), http.StatusConflict, "would_lose_quorum")
	if got := s.leaving(); len(got) != 0 {
		t.Errorf("leaving %v after a refusal, want none", got)
	}
	var scalings int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM operations WHERE kind = 'control-plane-scaling'`).Scan(&scalings); err != nil || scalings != 0 {
		t.Fatalf("%d scalings recorded after the refusal (%v)", scalings, err)
	}
}
