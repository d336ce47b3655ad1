package faultinjection

import (
	"context"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// A replacement points the control-plane name anew: off the endpoint
// (the node it points at, as a CA rotation may have left it on any node)
// when that node is the one replaced, to the new node (ready, and staying:
// an upgrade's next replacements are of old nodes, so the name moves once),
// before the old VM goes; kept on the endpoint when another node is
// replaced.
func TestReplacementMovesTheNameOffTheEndpointOnly(t *testing.T) {
	const newNode = -1 // the replacement's new node
	for _, c := range []struct {
		name                string
		replaced, want, end int // indexes of the founding's VMs
	}{
		{"the endpoint replaced", 1, newNode, 1},
		{"another node replaced", 2, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t)
			res := s.Found(1, stacktest.ThreeNodes)
			vms := res.ControlPlaneVMIDs
			s.markReady(vms...)
			if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET endpoint_vm_id = $2 WHERE id = $1`, res.ClusterID, vms[c.end]); err != nil {
				t.Fatal(err)
			}
			if r := s.replace(res.ClusterID, vms[c.replaced]); r.Status != http.StatusAccepted {
				t.Fatalf("replace = %d %s, want 202", r.Status, r.Body)
			}
			made := s.newNodeVMOnceMade()
			if rep := s.finishReplacement(); rep.Replaced != 1 {
				t.Fatalf("reconciler reports %+v, want one replacement done", rep)
			}
			want := made
			if c.want != newNode {
				want = vms[c.want]
			}
			if got, recorded := s.endpoint(res.ClusterID); got != want || recorded != want {
				t.Errorf("the name points at VM %d (recorded %d), want %d", got, recorded, want)
			}
		})
	}
}

// newNodeVMOnceMade runs the reconciler until the replacement's new node
// has its VM, and answers it.
func (s *stack) newNodeVMOnceMade() int64 {
	s.t.Helper()
	for range 4 {
		if vm := s.newNodeVM(); vm != 0 {
			return vm
		}
		s.reconcile()
	}
	s.t.Fatal("the replacement made no VM for its new node")
	return 0
}

// endpoint is the VM whose address the cluster's name holds in the
// platform's DNS, and the one the cluster records.
func (s *stack) endpoint(id int64) (pointed, recorded int64) {
	s.t.Helper()
	recs := s.sim.Records("")
	if len(recs) != 1 {
		s.t.Fatalf("dns records %+v, want the control-plane name's one", recs)
	}
	err := s.pool.QueryRow(context.Background(), `SELECT (SELECT vm_id FROM kube_nodes WHERE kube_cluster_id = $1 AND role = 'control-plane'
		AND $2 IN (ipv4, public_ipv4)), coalesce(endpoint_vm_id, 0) FROM kube_clusters WHERE id = $1`, id, recs[0].Value).Scan(&pointed, &recorded)
	if err != nil {
		s.t.Fatal(err)
	}
	return pointed, recorded
}
