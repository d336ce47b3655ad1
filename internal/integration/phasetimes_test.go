package integration

import (
	"fmt"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// Where the time goes: GET /clusters/{id} shows, per node, each step it
// passed with its start, end and length, in the order the node reached
// them, and the step it is on now; a repeated report keeps the first time;
// a re-open starts the steps over.
func TestClusterShowsEachStepsTimes(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	first := s.bootstrapOf(1, res.ClusterID).Bootstrap.Nodes[0]
	if len(first.Steps) != 0 || first.Running == nil || first.Running.Phase != "bundle_fetched" {
		t.Fatalf("a founded node: steps %+v, running %+v; want none, bundle_fetched", first.Steps, first.Running)
	}
	vm := s.proof(res.ControlPlaneVMIDs[0])
	if r := s.FetchBundle(vm.id, vm.imds, vm.access); r.Status != 200 {
		t.Fatalf("bundle: %d %s", r.Status, r.Body)
	}
	s.mustReport(vm, `{"phase":"prerequisites_installed"}`, 204)
	s.mustReport(vm, `{"phase":"etcd_started"}`, 204)
	before := s.bootstrapOf(1, res.ClusterID).Bootstrap.Nodes[0]
	s.mustReport(vm, `{"phase":"etcd_started","message":"again"}`, 204)
	n := s.bootstrapOf(1, res.ClusterID).Bootstrap.Nodes[0]
	checkSteps(t, n, "[bundle_fetched prerequisites_installed etcd_started]")
	if last := n.Steps[2]; !last.EndedAt.Equal(before.Steps[2].EndedAt) {
		t.Errorf("a repeated report moved etcd_started's time: %s, was %s", last.EndedAt, before.Steps[2].EndedAt)
	}
	if n.Running == nil || n.Running.Phase != "kubelet_started" || !n.Running.StartedAt.Equal(n.Steps[2].EndedAt) {
		t.Errorf("running %+v, want kubelet_started since etcd_started's end %s", n.Running, n.Steps[2].EndedAt)
	}
	// Another node's steps are its own.
	if other := s.bootstrapOf(1, res.ClusterID).Bootstrap.Nodes[1]; len(other.Steps) != 0 {
		t.Errorf("an untouched node has steps %+v", other.Steps)
	}
	s.reopen(res.ClusterID, vm.id)
	if again := s.bootstrapOf(1, res.ClusterID).Bootstrap.Nodes[0]; len(again.Steps) != 0 ||
		again.Running == nil || again.Running.Phase != "bundle_fetched" {
		t.Errorf("after a re-open: steps %+v, running %+v; want none, bundle_fetched", again.Steps, again.Running)
	}
}

// checkSteps holds n's steps to phases, each starting where the one before
// ended and lasting its ended_at - started_at.
func checkSteps(t *testing.T, n nodeBootstrap, phases string) {
	t.Helper()
	var got []string
	for i, st := range n.Steps {
		got = append(got, st.Phase)
		if i > 0 && !st.StartedAt.Equal(n.Steps[i-1].EndedAt) {
			t.Errorf("step %s starts at %s, not where %s ended (%s)", st.Phase, st.StartedAt, n.Steps[i-1].Phase, n.Steps[i-1].EndedAt)
		}
		if want := st.EndedAt.Sub(st.StartedAt).Seconds(); st.EndedAt.Before(st.StartedAt) || st.Seconds != want {
			t.Errorf("step %s: %s to %s, %v s; want %v", st.Phase, st.StartedAt, st.EndedAt, st.Seconds, want)
		}
	}
	if fmt.Sprint(got) != phases {
		t.Fatalf("steps %v, want %s", got, phases)
	}
}
