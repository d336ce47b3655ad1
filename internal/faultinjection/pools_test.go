package faultinjection

import (
	"context"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// poolStep is one remote step of a pool operation, held at its nth call,
// with the request that is cut off there and what the pool settles as.
type poolStep struct {
	step    string
	ofTwo   bool // the operation starts from a pool of two
	gate    func(*stack) *gate
	n       int
	request func(s *stack, clusterID int64) stacktest.Response
	state   string // the pool's state once the reconciler ran
	workers int    // and its workers
}

func createPool(s *stack, id int64) stacktest.Response {
	return stacktest.Do(s.t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, s.Bearer(1))
}

func scalePool(count string) func(*stack, int64) stacktest.Response {
	return func(s *stack, id int64) stacktest.Response {
		return stacktest.Do(s.t, http.MethodPatch, s.PoolsURL(id, "workers"), `{"count":`+count+`}`, s.Bearer(1))
	}
}

func deletePool(s *stack, id int64) stacktest.Response {
	return stacktest.Do(s.t, http.MethodDelete, s.PoolsURL(id, "workers"), "", s.Bearer(1))
}

// poolSteps are the remote steps of every pool operation: where a cut-off
// or killed function can leave one. The scale and delete cases start from
// a pool of two.
func vmCreates(s *stack) *gate { return &s.vmCreates }
func vmReads(s *stack) *gate   { return &s.vmReads }
func vmDeletes(s *stack) *gate { return &s.vmDeletes }

var poolSteps = []poolStep{
	{"create: first VM create", false, vmCreates, 1, createPool, "active", 2},
	{"create: last VM create", false, vmCreates, 2, createPool, "active", 2},
	{"create: address polling", false, vmReads, 1, createPool, "active", 2},
	{"scale up: VM create", true, vmCreates, 1, scalePool("3"), "active", 3},
	{"scale up: address polling", true, vmReads, 1, scalePool("3"), "active", 3},
	{"scale down: first VM delete", true, vmDeletes, 1, scalePool("0"), "active", 0},
	{"scale down: last VM delete", true, vmDeletes, 2, scalePool("0"), "active", 0},
	{"delete: first VM delete", true, vmDeletes, 1, deletePool, "deleted", 0},
	{"delete: last VM delete", true, vmDeletes, 2, deletePool, "deleted", 0},
}

// A pool operation cut off at each of its remote steps is finished by the
// reconciler: the pool settles with the workers asked for, each with a
// VM, and no VM is left that no node row names.
func TestPoolOperationCutOffAtEachStepIsFinished(t *testing.T) {
	for _, c := range poolSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			id := s.Found(1, stacktest.OneNode).ClusterID
			if c.ofTwo {
				s.AddPool(1, id, stacktest.TwoWorkers)
			}
			s.cutOff(c.gate(s), c.n, func() stacktest.Response { return c.request(s, id) })
			if rep := s.reconcile(); rep.PoolsSettled != 1 {
				t.Errorf("reconciler report %+v, want one pool operation settled", rep)
			}
			s.assertPoolSettled(c.state, c.workers)
			s.assertSettled()
		})
	}
}

// assertPoolSettled: the one pool is in state with n workers, each with a
// VM that is live, none retiring; the VMs live are the control plane's one
// and the workers'.
func (s *stack) assertPoolSettled(state string, n int) {
	s.t.Helper()
	ctx := context.Background()
	var got string
	var lease *string
	if err := s.pool.QueryRow(ctx, `SELECT state, (SELECT o.lease_owner FROM operations o WHERE o.target_type = 'node_pool' AND o.target_id = node_pools.id
		AND o.ended_at IS NULL) FROM node_pools`).Scan(&got, &lease); err != nil || got != state || lease != nil {
		s.t.Errorf("pool %q holding lease %v (%v), want %s and let go", got, lease, err, state)
	}
	var workers, withVM int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(vm_id) FROM kube_nodes WHERE role = 'worker'`).Scan(&workers, &withVM); err != nil ||
		workers != n || withVM != n {
		s.t.Errorf("%d workers, %d with a VM (%v); want %d each", workers, withVM, err, n)
	}
	if _, _, _, live := s.counts(); live != 1+n {
		s.t.Errorf("%d VMs live, want the control plane's and %d workers'", live, n)
	}
}

// A pool create cut off at its first VM create, whose second create the
// compute API refuses when the reconciler repeats the operation, is turned
// back there: its workers' VMs deleted (the refused one found by its
// token), the pool failed.
func TestPoolCreateCutOffThenFailingIsTurnedBack(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.cutOff(&s.vmCreates, 1, func() stacktest.Response { return createPool(s, id) })
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	if rep := s.reconcile(); rep.PoolsTurnedBack != 1 {
		t.Errorf("reconciler report %+v, want one pool operation turned back", rep)
	}
	s.assertPoolSettled("failed", 0)
	s.assertSettled()
}
