package faultinjection

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// replaceURL is the replace route of cluster id's node whose VM is vm.
func (s *stack) replaceURL(id, vm int64) string {
	return s.APIURL + "/clusters/" + strconv.FormatInt(id, 10) + "/nodes/" + strconv.FormatInt(vm, 10) + "/replace"
}

func (s *stack) replace(id, vm int64) stacktest.Response {
	return stacktest.Do(s.t, http.MethodPost, s.replaceURL(id, vm), "", s.Bearer(1))
}

// markReady records the nodes of VMs as having reported ready, as their
// last status report does (the report route is tested on its own).
func (s *stack) markReady(vms ...int64) {
	s.t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_nodes SET phase = 'ready', ready_at = now()
		WHERE vm_id = ANY($1)`, vms); err != nil {
		s.t.Fatal(err)
	}
}

// newNodeVM is the VM of the node a replacement made, 0 while it has none.
func (s *stack) newNodeVM() int64 {
	s.t.Helper()
	var vm *int64
	if err := s.pool.QueryRow(context.Background(), `SELECT vm_id FROM kube_nodes WHERE replacement_id IS NOT NULL`).Scan(&vm); err != nil {
		s.t.Fatal(err)
	}
	if vm == nil {
		return 0
	}
	return *vm
}

// replacing founds a three-node cluster whose nodes reported ready and
// asks for the replacement of its first node: 202.
func (s *stack) replacing() (clusterID int64, vms []int64) {
	s.t.Helper()
	res := s.Found(1, stacktest.ThreeNodes)
	s.markReady(res.ControlPlaneVMIDs...)
	r := s.replace(res.ClusterID, res.ControlPlaneVMIDs[0])
	if r.Status != http.StatusAccepted {
		s.t.Fatalf("replace = %d %s, want 202", r.Status, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != "/clusters/"+strconv.FormatInt(res.ClusterID, 10) {
		s.t.Errorf("Location %q, want the cluster", loc)
	}
	return res.ClusterID, res.ControlPlaneVMIDs
}

// cutOffReconciler starts a reconciler run whose compute call at g is held
// for good, and returns once it is held.
func (s *stack) cutOffReconciler(g *gate, n int) {
	s.reconciles++
	r := s.reconcilerAt(time.Duration(s.reconciles) * 10 * time.Minute)
	s.cutOff(g, n, func() stacktest.Response {
		_, _ = r.Run(context.Background()) // its writes after the cut-off are refused by the lease fence
		return stacktest.Response{}
	})
}

// finishReplacement runs the reconciler, marking the new node ready once it
// has a VM, until the replacement is no longer in progress (at most four
// runs), and sums what the runs did.
func (s *stack) finishReplacement() reconciler.Report {
	s.t.Helper()
	var sum reconciler.Report
	for range 4 {
		rep := s.reconcile()
		sum.Replaced += rep.Replaced
		sum.ReplacementsFailed += rep.ReplacementsFailed
		if rep.Replaced+rep.ReplacementsFailed > 0 {
			return sum
		}
		if vm := s.newNodeVM(); vm != 0 {
			s.markReady(vm)
		}
	}
	return sum
}

// replaceStep is one remote step of a replacement where the reconciler
// run driving it is cut off; ready says the new node reported ready
// before (the old VM's deletion comes after it).
type replaceStep struct {
	step  string
	gate  func(*stack) *gate
	n     int
	ready bool
}

var replaceSteps = []replaceStep{
	{"new VM create", vmCreates, 1, false},
	{"address polling", vmReads, 1, false},
	{"old VM delete", vmDeletes, 1, true},
}

// A replacement whose reconciler run is cut off at each of its remote
// steps is finished by the next runs: the old VM deleted and its node
// removed, one new node with one VM (never a second VM for it, never a
// second new node), no VM without a node, the cluster's lease let go.
func TestReplacementCutOffAtEachStepIsFinished(t *testing.T) {
	for _, c := range replaceSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			id, vms := s.replacing()
			if c.ready {
				if rep := s.reconcile(); rep.ReplacementsWaiting != 1 {
					t.Fatalf("reconciler report %+v, want the replacement waiting for its new node", rep)
				}
				if _, _, _, live := s.counts(); live != 4 {
					t.Fatalf("%d VMs live while the new node is not ready, want the old one kept beside it (4)", live)
				}
				s.markReady(s.newNodeVM())
				s.assertNameMovedBeforeTheOldVM(id, vms[0])
			}
			s.cutOffReconciler(c.gate(s), c.n)
			if rep := s.finishReplacement(); rep.Replaced != 1 {
				t.Errorf("reconciler reports %+v, want one replacement done", rep)
			}
			s.assertReplaced(id, vms)
			s.assertSettled()
		})
	}
}

// assertNameMovedBeforeTheOldVM: once the new node is ready, the next run
// moves the control-plane name off the old node (the cluster's endpoint,
// its first node) and waits out the record's TTL with the old VM still
// live, so no client of the name meets an address where nothing answers.
func (s *stack) assertNameMovedBeforeTheOldVM(id, old int64) {
	s.t.Helper()
	if rep := s.reconcile(); rep.ReplacementsWaiting != 1 || rep.Replaced != 0 {
		s.t.Fatalf("reconciler report %+v, want the replacement waiting out the name's TTL", rep)
	}
	var endpoint int64
	if err := s.pool.QueryRow(context.Background(), `SELECT coalesce(endpoint_vm_id, 0) FROM kube_clusters WHERE id = $1`, id).Scan(&endpoint); err != nil {
		s.t.Fatal(err)
	}
	if endpoint == old || endpoint == 0 {
		s.t.Errorf("the control-plane name points at VM %d, want it moved off the old node's VM %d", endpoint, old)
	}
	if _, _, _, live := s.counts(); live != 4 {
		s.t.Errorf("%d VMs live while the name's TTL runs, want the old one kept (4)", live)
	}
}

// assertReplaced: the replacement is done; the cluster has three
// control-plane nodes, none retiring, the first of vms gone and a new one;
// four VMs were ever created (the founding's three and one new), three
// are live; the cluster is active and its lease let go.
func (s *stack) assertReplaced(id int64, vms []int64) {
	s.t.Helper()
	ctx := context.Background()
	var state string
	var nodes, retiring, old, born int
	err := s.pool.QueryRow(ctx, `SELECT (SELECT state FROM node_replacements),
		count(*), count(*) FILTER (WHERE retiring), count(*) FILTER (WHERE vm_id = $1), count(*) FILTER (WHERE replacement_id IS NOT NULL)
		FROM kube_nodes WHERE role = 'control-plane'`, vms[0]).Scan(&state, &nodes, &retiring, &old, &born)
	if err != nil || state != "done" || nodes != 3 || retiring != 0 || old != 0 || born != 1 {
		s.t.Errorf("replacement %q, %d nodes (%d retiring, %d the old one's, %d new) (%v); want done, 3, 0, 0, 1",
			state, nodes, retiring, old, born, err)
	}
	if _, _, created, live := s.counts(); created != 4 || live != 3 {
		s.t.Errorf("%d VMs created, %d live; want 4 and 3", created, live)
	}
	var status string
	var lease *string
	if err := s.pool.QueryRow(ctx, `SELECT status, (SELECT o.lease_owner FROM operations o WHERE o.kube_cluster_id = $1 AND o.lease_owner IS NOT NULL LIMIT 1)
		FROM kube_clusters WHERE id = $1`, id).Scan(&status, &lease); err != nil ||
		status != "active" || lease != nil {
		s.t.Errorf("cluster %q holding lease %v (%v), want active and let go", status, lease, err)
	}
}

// A replacement cut off at its new VM's create, whose create the compute
// API then refuses when the next run repeats it, is turned back: the new
// VM (found by its token) deleted and its node removed, the old node kept
// and no longer retiring, the replacement failed with its reason.
func TestReplacementCutOffThenFailingIsTurnedBack(t *testing.T) {
	s := newStack(t)
	_, vms := s.replacing()
	s.cutOffReconciler(&s.vmCreates, 1)
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 1})
	if rep := s.reconcile(); rep.ReplacementsFailed != 1 {
		t.Errorf("reconciler report %+v, want one replacement turned back", rep)
	}
	var state, reason string
	var nodes, retiring int
	err := s.pool.QueryRow(context.Background(), `SELECT (SELECT state FROM node_replacements), (SELECT o.message FROM operations o WHERE o.target_type = 'node_replacement'),
		count(*), count(*) FILTER (WHERE retiring) FROM kube_nodes`).Scan(&state, &reason, &nodes, &retiring)
	if err != nil || state != "failed" || reason == "" || nodes != 3 || retiring != 0 {
		t.Errorf("replacement %q (%q), %d nodes, %d retiring (%v); want failed with a reason, 3, 0", state, reason, nodes, retiring, err)
	}
	if _, _, _, live := s.counts(); live != 3 {
		t.Errorf("%d VMs live, want the founding's 3", live)
	}
	s.assertSettled()
	// The cluster is free again: its first node can be replaced, by a node
	// whose name and ordinal the turned-back one's VM never held (it may
	// have fetched its bundle, identities and all).
	if r := s.replace(1, vms[0]); r.Status != http.StatusAccepted {
		t.Errorf("replacing again = %d %s, want 202", r.Status, r.Body)
	}
	var names []string
	if err := s.pool.QueryRow(context.Background(), `SELECT array_agg(new_node_name ORDER BY id) FROM node_replacements`).Scan(&names); err != nil ||
		len(names) != 2 || names[0] == names[1] {
		t.Errorf("the replacements' new nodes are %q (%v), want two names", names, err)
	}
}

// Replacing is refused (409, nothing written) when it could lose quorum,
// and while another replacement runs; deleting the cluster waits for it.
func TestReplacementRefusals(t *testing.T) {
	s := newStack(t)
	one := s.Found(1, stacktest.OneNode)
	s.markReady(one.ControlPlaneVMIDs...)
	s.assertRefused(s.replace(one.ClusterID, one.ControlPlaneVMIDs[0]), http.StatusConflict, "would_lose_quorum")
	three := s.Found(1, stacktest.ThreeNodes)
	s.markReady(three.ControlPlaneVMIDs[1])
	s.assertRefused(s.replace(three.ClusterID, three.ControlPlaneVMIDs[0]), http.StatusConflict, "would_lose_quorum")
	s.assertRefused(s.replace(three.ClusterID, one.ControlPlaneVMIDs[0]), http.StatusNotFound, "not_found")
	var replacements int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM node_replacements`).Scan(&replacements); err != nil || replacements != 0 {
		t.Fatalf("%d replacements recorded after refusals (%v)", replacements, err)
	}
	s.markReady(three.ControlPlaneVMIDs...)
	if r := s.replace(three.ClusterID, three.ControlPlaneVMIDs[0]); r.Status != http.StatusAccepted {
		t.Fatalf("replace = %d %s, want 202", r.Status, r.Body)
	}
	s.assertRefused(s.replace(three.ClusterID, three.ControlPlaneVMIDs[0]), http.StatusConflict, "replacement_in_progress")
	s.assertRefused(s.replace(three.ClusterID, three.ControlPlaneVMIDs[1]), http.StatusConflict, "replacement_in_progress")
	del := stacktest.Do(t, http.MethodDelete, s.APIURL+"/clusters/"+strconv.FormatInt(three.ClusterID, 10), "", s.Bearer(1))
	s.assertRefused(del, http.StatusConflict, "replacement_in_progress")
}

func (s *stack) assertRefused(r stacktest.Response, status int, code string) {
	s.t.Helper()
	if r.Status != status || r.ErrorCode(s.t) != code {
		s.t.Errorf("= %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// The old node's identity stops working once it is replaced: its VM is
// deleted and no node names it, so its bundle fetch is refused.
func TestReplacedNodeIsRefusedItsBundle(t *testing.T) {
	s := newStack(t)
	_, vms := s.replacing()
	imds, access := s.VMCredentials(vms[0])
	if rep := s.finishReplacement(); rep.Replaced != 1 {
		t.Fatalf("reconciler reports %+v, want one replacement done", rep)
	}
	if r := s.FetchBundle(vms[0], imds, access); r.Status < 400 {
		t.Errorf("the replaced node's fetch = %d, want refused", r.Status)
	}
}

// A replacement whose new node never reports ready ends failed after an
// hour and keeps both nodes, none retiring; the cluster can be deleted
// then, and its deletion removes every VM.
func TestReplacementWhoseNewNodeNeverReadyKeepsBoth(t *testing.T) {
	s := newStack(t)
	id, _ := s.replacing()
	var failed int
	for range 8 { // ten minutes later each: past the hour
		failed += s.reconcile().ReplacementsFailed
	}
	if failed != 1 {
		t.Fatalf("%d replacements failed, want 1", failed)
	}
	var state, reason string
	var nodes, retiring int
	err := s.pool.QueryRow(context.Background(), `SELECT (SELECT state FROM node_replacements), (SELECT o.message FROM operations o WHERE o.target_type = 'node_replacement'),
		count(*), count(*) FILTER (WHERE retiring) FROM kube_nodes`).Scan(&state, &reason, &nodes, &retiring)
	if err != nil || state != "failed" || !strings.Contains(reason, "did not report ready") || nodes != 4 || retiring != 0 {
		t.Errorf("replacement %q (%q), %d nodes, %d retiring (%v); want failed, 4 nodes kept, none retiring", state, reason, nodes, retiring, err)
	}
	del := stacktest.Do(t, http.MethodDelete, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1))
	if del.Status != http.StatusOK {
		t.Fatalf("delete = %d %s, want 200", del.Status, del.Body)
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the cluster's deletion", live)
	}
}

// A run claims only what was due when it began: the replacement it lets
// go to wait for its new node (looked at again a few seconds later) is the
// next run's, however far this run's clock moves on. Claiming by the clock
// of each claim spun one run on one waiting operation (until its new
// node's time ran out and the replacement failed).
func TestAWaitLetGoIsTheNextRunsNotThisOnes(t *testing.T) {
	s := newStack(t)
	s.replacing()
	r := s.reconcilerAt(10 * time.Minute)
	moving := *r.Deps
	var reads atomic.Int64
	moving.Now = func() time.Time { return time.Now().Add(10*time.Minute + time.Duration(reads.Add(1))*10*time.Second) }
	r.Deps = &moving
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("reconciler: %v", err)
	}
	if rep.ReplacementsWaiting != 1 || rep.ReplacementsFailed != 0 {
		t.Errorf("one run looked at the waiting replacement %d times (report %+v), want once", rep.ReplacementsWaiting, rep)
	}
}
