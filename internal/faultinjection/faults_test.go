package faultinjection

import (
	"context"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// TestPostgresStoppedDuringFounding stops the database while the second of
// three VM creates is in flight, and starts it again before that create goes
// on. Founding holds no transaction across a remote call: the cluster and
// the first VM were recorded before the stop. Recording the second VM may
// meet a dead connection of the pool (503: the undo, on fresh connections,
// deletes every VM, the second found by its token, and ends the cluster
// failed) or a fresh one (201, founded whole): which one is pgx's choice,
// and either outcome is whole. Nothing is half-written, no VM is orphaned.
//
// The simulator keeps its VMs in the same server, standing for a compute
// API whose own database is up: we start the server again before letting
// the create go on, and the simulator drops its dead connections as any
// service would on reconnect (simPool.Reset), as does the pool the test's
// own checks use. Only the functions' pools are under test, and they are
// never rebuilt.
func TestPostgresStoppedDuringFounding(t *testing.T) {
	s := newStack(t)
	done := s.createHeldAtVM(2)
	pg.Stop()
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.simPool.Reset()
	s.pool.Reset() // the test's own checks' pool; the functions' are never reset
	close(s.vmCreates.release)
	r := <-done
	clusters, _, _, live := s.counts()
	status := s.clusters()[0].status
	switch {
	case r.Status == http.StatusCreated:
		if clusters != 1 || live != 3 || status != "active" {
			t.Fatalf("201 but %d clusters, %d live VMs, status %s; want 1, 3, active", clusters, live, status)
		}
	case r.Status == http.StatusServiceUnavailable && r.ErrorCode(t) == "database_unavailable":
		if clusters != 1 || live != 0 || status != "failed" {
			t.Fatalf("503 but %d clusters, %d live VMs, status %s; want 1, 0, failed", clusters, live, status)
		}
	default:
		t.Fatalf("= %d %s, want 201 or 503 database_unavailable", r.Status, r.Body)
	}
	s.assertSettled()
	// The same pool serves the next founding.
	if r := s.Create(1, stacktest.ThreeNodes); r.Status != http.StatusCreated {
		t.Fatalf("the next create = %d %s", r.Status, r.Body)
	}
}

// TestPostgresDownThroughoutFounding: the database stays down while the
// compute API (the simulator, on the same server) is asked for the second
// VM. The compute API fails, and neither the undo nor its record can reach
// a database, so the first VM outlives the request, and the answer says
// so (503 operation_continues: the founding, which brought no key of its
// own, is turned back by the reconciler), never that nothing was kept. The
// cluster row, committed before the first VM was asked for, still owns
// it: once the database is back, the reconciler deletes the VM and ends
// the cluster failed. (In production the compute API has its own
// database, and the undo would go through at once.)
func TestPostgresDownThroughoutFounding(t *testing.T) {
	s := newStack(t)
	done := s.createHeldAtVM(2)
	pg.Stop()
	close(s.vmCreates.release)
	r := <-done
	goesOn(t, "the founding", r, "the reconciler turns it back")
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.simPool.Reset()
	s.pool.Reset() // the test's own checks' pool; the functions' are never reset
	if clusters, _, created, live := s.counts(); clusters != 1 || created != 1 || live != 1 {
		t.Fatalf("%d clusters, %d VMs created, %d live; want 1 (founding), 1, 1", clusters, created, live)
	}
	if rep := s.reconcile(); rep.Failed != 1 {
		t.Errorf("reconciler report %+v, want one founding undone", rep)
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the reconciler ran", live)
	}
	s.assertSettled()
}

// TestPostgresStoppedDuringBundleFetch stops the database after a fetch has
// passed the four proofs and before it loads the topology: 503. Started
// again, the next fetch succeeds on the same pool, which has replaced its
// dead connections by itself.
func TestPostgresStoppedDuringBundleFetch(t *testing.T) {
	s := newStack(t)
	vm := s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs[0]
	imds, access := s.VMCredentials(vm)
	if r := s.FetchBundle(vm, imds, access); r.Status != 200 {
		t.Fatalf("fetch = %d %s", r.Status, r.Body)
	}
	before := s.pools["GetBundleFunction"].Stat().NewConnsCount()

	s.topologies.holdOn(1)
	done := make(chan stacktest.Response)
	go func() { done <- s.FetchBundle(vm, imds, access) }()
	<-s.topologies.arrived
	pg.Stop()
	close(s.topologies.release)
	r := <-done
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" {
		t.Fatalf("mid-fetch = %d %s, want 503 database_unavailable", r.Status, r.Body)
	}
	// Down before the fetch: the first proof that needs the database says so,
	// with the same code as any other use of the database.
	if r := s.FetchBundle(vm, imds, access); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" {
		t.Fatalf("while down = %d %s, want 503 database_unavailable", r.Status, r.Body)
	}
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := s.FetchBundle(vm, imds, access); r.Status != 200 {
		t.Fatalf("the first fetch after the restart = %d %s", r.Status, r.Body)
	}
	if after := s.pools["GetBundleFunction"].Stat().NewConnsCount(); after <= before {
		t.Errorf("the pool made no new connection (%d → %d)", before, after)
	}
}

// TestMotoStopped: with KMS gone, founding and fetching are 503 and nothing
// is persisted. (The production wiring caches unwrapped data keys in a warm
// container, which would still serve a recently opened cluster; this
// envelope has no cache, so every fetch asks KMS.)
func TestMotoStopped(t *testing.T) {
	s := newStack(t)
	vm := s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs[0]
	imds, access := s.VMCredentials(vm)
	s.stopMoto()
	if r := s.Create(1, stacktest.ThreeNodes); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "kms_unavailable" {
		t.Fatalf("create = %d %s, want 503 kms_unavailable", r.Status, r.Body)
	}
	if r := s.FetchBundle(vm, imds, access); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "kms_unavailable" {
		t.Fatalf("fetch = %d %s, want 503 kms_unavailable", r.Status, r.Body)
	}
	if clusters, nodes, created, live := s.counts(); clusters != 1 || nodes != 3 || created != 3 || live != 3 {
		t.Errorf("%d clusters, %d nodes, %d VMs created, %d live; want only the first cluster's", clusters, nodes, created, live)
	}
}
