package faultinjection

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// createWithKey is POST /clusters for org 1 with an Idempotency-Key.
func (s *stack) createWithKey(key, body string) stacktest.Response {
	h := s.Bearer(1)
	h["Idempotency-Key"] = key
	return stacktest.Do(s.t, http.MethodPost, s.APIURL+"/clusters", body, h)
}

// computeCalls is how many calls of the compute API the gates saw.
func (s *stack) computeCalls() int {
	return s.refReads.calls() + s.vmCreates.calls() + s.sgCreates.calls() + s.vmReads.calls() + s.vmDeletes.calls()
}

// A same-key POST /clusters while the first one is still checking its
// platform references (before its cluster row exists) answers at once
// from the database: 409 founding_in_progress for the same body, 409
// idempotency_key_reused for another; it makes no compute call. Once the
// first is founded, the same key answers its cluster.
func TestSameKeyWhileFoundingAnswersAtOnce(t *testing.T) {
	s := newStack(t)
	s.refReads.holdOn(1)
	done := make(chan stacktest.Response, 1)
	go func() { done <- s.createWithKey("retry-1", stacktest.OneNode) }()
	<-s.refReads.arrived
	before := s.computeCalls()
	if r := s.createWithKey("retry-1", stacktest.OneNode); r.Status != http.StatusConflict || r.ErrorCode(t) != "founding_in_progress" {
		t.Errorf("the same request = %d %s, want 409 founding_in_progress", r.Status, r.Body)
	}
	if r := s.createWithKey("retry-1", stacktest.ThreeNodes); r.Status != http.StatusConflict || r.ErrorCode(t) != "idempotency_key_reused" {
		t.Errorf("another body = %d %s, want 409 idempotency_key_reused", r.Status, r.Body)
	}
	if after := s.computeCalls(); after != before {
		t.Errorf("the retries made %d compute calls, want none", after-before)
	}
	close(s.refReads.release)
	if r := <-done; r.Status != http.StatusCreated {
		t.Fatalf("the first request = %d %s, want 201", r.Status, r.Body)
	}
	if r := s.createWithKey("retry-1", stacktest.OneNode); r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same request once founded = %d %s, want 201 replayed", r.Status, r.Body)
	}
	if clusters, _, _, _ := s.counts(); clusters != 1 {
		t.Errorf("%d clusters, want 1", clusters)
	}
}

// downDuring stops the database while the held call of g (its n-th) is in
// flight and lets it go on: the compute API (the simulator, on the same
// server) fails, and neither the undo nor its record reaches a database.
// It answers the request, with the database started again.
func (s *stack) downDuring(g *gate, n int, request func() stacktest.Response) stacktest.Response {
	s.t.Helper()
	g.holdOn(n)
	done := make(chan stacktest.Response, 1)
	go func() { done <- request() }()
	<-g.arrived
	pg.Stop()
	close(g.release)
	r := <-done
	if err := pg.Start(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	s.simPool.Reset()
	s.pool.Reset() // the test's own checks' pool; the functions' are never reset
	return r
}

// goesOn fails the test unless r is 503 operation_continues whose message
// says what to do (want).
func goesOn(t *testing.T, what string, r stacktest.Response, want string) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "operation_continues" || !strings.Contains(string(r.Body), want) {
		t.Errorf("%s = %d %s, want 503 operation_continues saying %q", what, r.Status, r.Body, want)
	}
	if strings.Contains(string(r.Body), "nothing was kept") {
		t.Errorf("%s says nothing was kept: %s", what, r.Body)
	}
}

// A founding with its own key whose undo cannot reach the database goes
// on, and says so: the reconciler finishes it, and the same key then
// answers the cluster.
func TestFoundingThatCannotBeTurnedBackGoesOn(t *testing.T) {
	s := newStack(t)
	r := s.downDuring(&s.vmCreates, 2, func() stacktest.Response { return s.createWithKey("goes-on", stacktest.ThreeNodes) })
	goesOn(t, "the founding", r, "retry with the same Idempotency-Key")
	if rep := s.reconcile(); rep.Finished != 1 {
		t.Errorf("reconciler report %+v, want the founding finished", rep)
	}
	if _, _, _, live := s.counts(); live != 3 || s.clusters()[0].status != "active" {
		t.Errorf("%d VMs live, cluster %s; want 3 and active", live, s.clusters()[0].status)
	}
	if r := s.createWithKey("goes-on", stacktest.ThreeNodes); r.Status != http.StatusCreated {
		t.Errorf("the same key once finished = %d %s, want 201", r.Status, r.Body)
	}
	s.assertSettled()
}

// A pool operation whose remote step fails with the database down (so its
// undo cannot even be recorded) answers that it goes on, never that
// nothing was kept: the reconciler then finishes it, as the answer said.
func TestPoolOperationThatCannotBeTurnedBackGoesOn(t *testing.T) {
	for _, c := range []poolStep{
		{"create: first VM create", false, vmCreates, 1, createPool, "active", 2},
		{"scale up: VM create", true, vmCreates, 1, scalePool("3"), "active", 3},
		{"scale down: first VM delete", true, vmDeletes, 1, scalePool("0"), "active", 0},
		{"delete: first VM delete", true, vmDeletes, 1, deletePool, "deleted", 0},
	} {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			id := s.Found(1, stacktest.OneNode).ClusterID
			if c.ofTwo {
				s.AddPool(1, id, stacktest.TwoWorkers)
			}
			r := s.downDuring(c.gate(s), c.n, func() stacktest.Response { return c.request(s, id) })
			goesOn(t, c.step, r, "the reconciler finishes it")
			if rep := s.reconcile(); rep.PoolsSettled != 1 {
				t.Errorf("reconciler report %+v, want the pool operation finished", rep)
			}
			s.assertPoolSettled(c.state, c.workers)
			s.assertSettled()
		})
	}
}

// A replacement's request makes no remote call: with the database down it
// answers 503 database_unavailable and nothing of it is recorded (the node
// is not retiring, no replacement exists); asked again, it is accepted.
func TestReplacementRequestWithTheDatabaseDown(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	s.markReady(res.ControlPlaneVMIDs...)
	pg.Stop()
	r := s.replace(res.ClusterID, res.ControlPlaneVMIDs[0])
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.pool.Reset()
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" {
		t.Fatalf("replace = %d %s, want 503 database_unavailable", r.Status, r.Body)
	}
	var replacements, retiring int
	if err := s.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM node_replacements),
		(SELECT count(*) FROM kube_nodes WHERE retiring)`).Scan(&replacements, &retiring); err != nil || replacements+retiring != 0 {
		t.Errorf("%d replacements, %d nodes retiring (%v); want nothing recorded", replacements, retiring, err)
	}
	if r := s.replace(res.ClusterID, res.ControlPlaneVMIDs[0]); r.Status != http.StatusAccepted {
		t.Errorf("replace again = %d %s, want 202", r.Status, r.Body)
	}
}
