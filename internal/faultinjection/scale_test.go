package faultinjection

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// scale asks PATCH /clusters/{id} for body.
func (s *stack) scale(id int64, body string) stacktest.Response {
	return stacktest.Do(s.t, http.MethodPatch, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), body, s.Bearer(1))
}

// scaling founds a one-node cluster whose node reported ready and asks for
// three control-plane nodes: 202.
func (s *stack) scaling() (clusterID int64, vms []int64) {
	s.t.Helper()
	res := s.Found(1, stacktest.OneNode)
	s.markReady(res.ControlPlaneVMIDs...)
	r := s.scale(res.ClusterID, `{"control_plane_count":3}`)
	if r.Status != http.StatusAccepted {
		s.t.Fatalf("scale = %d %s, want 202", r.Status, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != "/clusters/"+strconv.FormatInt(res.ClusterID, 10) {
		s.t.Errorf("Location %q, want the cluster", loc)
	}
	return res.ClusterID, res.ControlPlaneVMIDs
}

// joining is the VMs of the nodes a scaling made that have not reported
// ready, and how many such nodes there are (a node without a VM yet
// counts).
func (s *stack) joining() (vms []int64, nodes int) {
	s.t.Helper()
	err := s.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(vm_id) FILTER (WHERE vm_id IS NOT NULL), '{}'), count(*)
		FROM kube_nodes WHERE scaling_id IS NOT NULL AND ready_at IS NULL`).Scan(&vms, &nodes)
	if err != nil {
		s.t.Fatal(err)
	}
	return vms, nodes
}

// finishScaling runs the reconciler, marking each new node ready once it
// has a VM, until the scaling is no longer in progress (at most eight
// runs), and sums what the runs did. Never more than one new node is on
// its way at once.
func (s *stack) finishScaling() reconciler.Report {
	s.t.Helper()
	var sum reconciler.Report
	for range 8 {
		rep := s.reconcile()
		sum.Scaled += rep.Scaled
		sum.ScalingsFailed += rep.ScalingsFailed
		if rep.Scaled+rep.ScalingsFailed > 0 {
			return sum
		}
		vms, n := s.joining()
		if n > 1 {
			s.t.Fatalf("%d new control-plane nodes on their way at once, want one at a time", n)
		}
		s.markReady(vms...)
	}
	return sum
}

// assertScaled: the scaling is done; the cluster has want control-plane
// nodes, none retiring, want VMs created and live (never a second VM for
// a node), its recorded count want, active and its lease let go.
func (s *stack) assertScaled(id int64, want int) {
	s.t.Helper()
	ctx := context.Background()
	var state string
	var nodes, retiring, count int
	var lease *string
	err := s.pool.QueryRow(ctx, `SELECT `+scalingState+`, count(*), count(*) FILTER (WHERE n.retiring),
		min(k.control_plane_count), (SELECT min(lease_owner) FROM operations WHERE kube_cluster_id = $1 AND ended_at IS NULL)
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id WHERE n.role = 'control-plane' AND k.id = $1`, id).
		Scan(&state, &nodes, &retiring, &count, &lease)
	if err != nil || state != "done" || nodes != want || retiring != 0 || count != want || lease != nil {
		s.t.Errorf("scaling %q, %d nodes (%d retiring), count %d, lease %v (%v); want done, %d, 0, %d, let go",
			state, nodes, retiring, count, lease, err, want, want)
	}
	if _, _, created, live := s.counts(); created != want || live != want {
		s.t.Errorf("%d VMs created, %d live; want %d and %d", created, live, want, want)
	}
}

// scalingState is the state of cluster $1's scaling as the API names it
// (its operation's).
const scalingState = `(SELECT CASE state WHEN 'running' THEN 'scaling' WHEN 'succeeded' THEN 'done' ELSE 'failed' END
	FROM operations WHERE kind = 'control-plane-scaling' AND kube_cluster_id = $1)`

// scalingEnd is the scaling's state and reason, how many nodes there are
// and the cluster's recorded count.
func (s *stack) scalingEnd(id int64) (state, reason string, nodes, count int, err error) {
	err = s.pool.QueryRow(context.Background(), `SELECT `+scalingState+`, (SELECT message FROM operations WHERE kind = 'control-plane-scaling' AND kube_cluster_id = $1),
		(SELECT count(*) FROM kube_nodes), control_plane_count FROM kube_clusters WHERE id = $1`, id).Scan(&state, &reason, &nodes, &count)
	return state, reason, nodes, count, err
}

// 1 → 3, one member at a time: the second new node is made only once the
// first reported ready (its etcd promoted), and the scaling ends with the
// count reached.
func TestScalingUpAddsOneMemberAtATime(t *testing.T) {
	s := newStack(t)
	id, _ := s.scaling()
	if rep := s.reconcile(); rep.ScalingsWaiting != 1 {
		t.Fatalf("reconciler report %+v, want the scaling waiting for its first new node", rep)
	}
	if _, nodes, _, live := s.counts(); nodes != 2 || live != 2 {
		t.Fatalf("%d nodes, %d VMs live while the first new node is not ready, want 2 and 2", nodes, live)
	}
	if rep := s.finishScaling(); rep.Scaled != 1 {
		t.Errorf("reconciler reports %+v, want one scaling done", rep)
	}
	s.assertScaled(id, 3)
	s.assertSettled()
	r := stacktest.Do(t, http.MethodGet, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1))
	if !strings.Contains(string(r.Body), `"control_plane_count":3`) {
		t.Errorf("GET /clusters/%d = %s, want control_plane_count 3", id, r.Body)
	}
}

var scaleSteps = []replaceStep{
	{"new VM create", vmCreates, 1, false},
	{"address polling", vmReads, 1, false},
}

// A scaling whose reconciler run is cut off at each of its remote steps
// is finished by the next runs: three nodes, three VMs ever created (never
// a second VM for a node, no VM without a node), the lease let go.
func TestScalingCutOffAtEachStepIsFinished(t *testing.T) {
	for _, c := range scaleSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			id, _ := s.scaling()
			s.cutOffReconciler(c.gate(s), c.n)
			if rep := s.finishScaling(); rep.Scaled != 1 {
				t.Errorf("reconciler reports %+v, want one scaling done", rep)
			}
			s.assertScaled(id, 3)
			s.assertSettled()
		})
	}
}

// A scaling cut off at its new VM's create, whose create the compute API
// then refuses when the next run repeats it, is turned back: the new VM
// (found by its token) deleted and its node removed, the scaling failed
// with its reason, the cluster's count what it kept (1).
func TestScalingCutOffThenFailingIsTurnedBack(t *testing.T) {
	s := newStack(t)
	id, _ := s.scaling()
	s.cutOffReconciler(&s.vmCreates, 1)
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 1})
	if rep := s.reconcile(); rep.ScalingsFailed != 1 {
		t.Errorf("reconciler report %+v, want one scaling turned back", rep)
	}
	state, reason, nodes, count, err := s.scalingEnd(id)
	if err != nil || state != "failed" || !strings.Contains(reason, "was removed") || nodes != 1 || count != 1 {
		t.Errorf("scaling %q (%q), %d nodes, count %d (%v); want failed with a reason, 1, 1", state, reason, nodes, count, err)
	}
	if _, _, _, live := s.counts(); live != 1 {
		t.Errorf("%d VMs live, want the founding's 1", live)
	}
	s.assertSettled()
	if r := s.scale(id, `{"control_plane_count":3}`); r.Status != http.StatusAccepted {
		t.Errorf("scaling again = %d %s, want 202", r.Status, r.Body)
	}
}

// A new member that never reports ready ends the scaling failed after an
// hour, keeping it (it may be in etcd); the cluster records the count it
// has and can be deleted, every VM with it.
func TestScalingWhoseNewNodeNeverReadyKeepsIt(t *testing.T) {
	s := newStack(t)
	id, _ := s.scaling()
	var failed int
	for range 8 { // ten minutes later each: past the hour
		failed += s.reconcile().ScalingsFailed
	}
	if failed != 1 {
		t.Fatalf("%d scalings failed, want 1", failed)
	}
	state, reason, nodes, count, err := s.scalingEnd(id)
	if err != nil || state != "failed" || !strings.Contains(reason, "did not report ready") || nodes != 2 || count != 2 {
		t.Errorf("scaling %q (%q), %d nodes, count %d (%v); want failed, 2 nodes kept, count 2", state, reason, nodes, count, err)
	}
	del := stacktest.Do(t, http.MethodDelete, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1))
	if del.Status != http.StatusOK {
		t.Fatalf("delete = %d %s, want 200", del.Status, del.Body)
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the cluster's deletion", live)
	}
}

// Every refusal answers as stated with nothing written: a count that is
// not 1, 3 or 5 (422); none (400); the count it has, a node
// not ready, another operation on its control plane (409); and while a
// scaling runs, a replacement and the cluster's deletion wait for it.
func TestScalingRefusals(t *testing.T) {
	s := newStack(t)
	one := s.Found(1, stacktest.OneNode)
	for _, body := range []string{`{"control_plane_count":2}`, `{"control_plane_count":4}`, `{"control_plane_count":0}`, `{"control_plane_count":7}`} {
		s.assertRefused(s.scale(one.ClusterID, body), http.StatusUnprocessableEntity, "invalid_control_plane_count")
	}
	s.assertRefused(s.scale(one.ClusterID, `{}`), http.StatusBadRequest, "invalid_request")
	s.assertRefused(s.scale(one.ClusterID, `{"control_plane_count":1}`), http.StatusConflict, "control_plane_unchanged")
	s.assertRefused(s.scale(one.ClusterID, `{"control_plane_count":3}`), http.StatusConflict, "would_lose_quorum") // not ready
	three := s.Found(1, stacktest.ThreeNodes)
	s.markReady(three.ControlPlaneVMIDs...)
	if r := s.replace(three.ClusterID, three.ControlPlaneVMIDs[0]); r.Status != http.StatusAccepted {
		t.Fatalf("replace = %d %s, want 202", r.Status, r.Body)
	}
	s.assertRefused(s.scale(three.ClusterID, `{"control_plane_count":5}`), http.StatusConflict, "replacement_in_progress")
	var scalings int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM operations WHERE kind = 'control-plane-scaling'`).Scan(&scalings); err != nil || scalings != 0 {
		t.Fatalf("%d scalings recorded after refusals (%v)", scalings, err)
	}
	s.markReady(one.ControlPlaneVMIDs...)
	if r := s.scale(one.ClusterID, `{"control_plane_count":5}`); r.Status != http.StatusAccepted {
		t.Fatalf("scale = %d %s, want 202", r.Status, r.Body)
	}
	s.assertRefused(s.scale(one.ClusterID, `{"control_plane_count":3}`), http.StatusConflict, "control_plane_scaling")
	s.assertRefused(s.replace(one.ClusterID, one.ControlPlaneVMIDs[0]), http.StatusConflict, "control_plane_scaling")
	del := stacktest.Do(t, http.MethodDelete, s.APIURL+"/clusters/"+strconv.FormatInt(one.ClusterID, 10), "", s.Bearer(1))
	s.assertRefused(del, http.StatusConflict, "control_plane_scaling")
}
