package faultinjection

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// TestPostgresStoppedDuringFounding stops the database while the second of
// three VM creates is in flight, and starts it again before that create goes
// on. The founding transaction died with its connection: k8sapi answers 503,
// commits nothing, and deletes all three VMs the compute API made.
//
// The simulator keeps its VMs in the same server, standing for a compute
// API whose own database is up: we start the server again before letting
// the create go on, and the simulator drops its dead connections as any
// service would on reconnect (simPool.Reset). Only k8sapi's pool is under
// test, and it is never rebuilt.
func TestPostgresStoppedDuringFounding(t *testing.T) {
	s := newStack(t)
	done := s.createHeldAtVM(2)
	pg.Stop()
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.simPool.Reset()
	close(s.vmCreates.release)
	r := <-done
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" {
		t.Fatalf("= %d %s, want 503 database_unavailable", r.Status, r.Body)
	}
	clusters, nodes, created, live := s.counts()
	if clusters != 0 || nodes != 0 || created != 3 || live != 0 {
		t.Fatalf("after the failed founding: %d clusters, %d nodes, %d VMs created, %d live; want 0, 0, 3, 0", clusters, nodes, created, live)
	}
	// The same pool serves the next founding.
	if r := s.Create(1, stacktest.ThreeNodes); r.Status != http.StatusCreated {
		t.Fatalf("the next create = %d %s", r.Status, r.Body)
	}
	if clusters, nodes, _, live := s.counts(); clusters != 1 || nodes != 3 || live != 3 {
		t.Errorf("after the next create: %d clusters, %d nodes, %d live VMs", clusters, nodes, live)
	}
}

// TestPostgresDownThroughoutFounding is the honest limit of the local
// setup: the database stays down while the compute API (the simulator, on
// the same server) is asked for the second VM. The compute API fails (502),
// and compensation cannot delete the first VM, because the simulator's own
// database is down too. k8sapi commits nothing and logs the orphan with its
// id; the VM is left for an operator (in production the compute API has its
// own database, and the delete would go through).
func TestPostgresDownThroughoutFounding(t *testing.T) {
	s := newStack(t)
	done := s.createHeldAtVM(2)
	pg.Stop()
	close(s.vmCreates.release)
	r := <-done
	if r.Status != http.StatusBadGateway || r.ErrorCode(t) != "compute_failed" {
		t.Fatalf("= %d %s, want 502 compute_failed", r.Status, r.Body)
	}
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.simPool.Reset()
	clusters, nodes, created, live := s.counts()
	if clusters != 0 || nodes != 0 || created != 1 || live != 1 {
		t.Fatalf("%d clusters, %d nodes, %d VMs created, %d live; want 0, 0, 1, 1", clusters, nodes, created, live)
	}
	l, _ := s.sim.LiveInstances(context.Background())
	if !strings.Contains(s.logs.String(), `"msg":"compensation: deleting VM failed; it is orphaned","vm_id":`+strconv.FormatInt(l[0].ID, 10)) {
		t.Errorf("the orphan is not logged with its id:\n%s", s.logs.String())
	}
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
	before := s.pool.Stat().NewConnsCount()

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
	// Down before the fetch: the first proof that needs the database says so.
	if r := s.FetchBundle(vm, imds, access); r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "unavailable" {
		t.Fatalf("while down = %d %s, want 503 unavailable", r.Status, r.Body)
	}
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := s.FetchBundle(vm, imds, access); r.Status != 200 {
		t.Fatalf("the first fetch after the restart = %d %s", r.Status, r.Body)
	}
	if after := s.pool.Stat().NewConnsCount(); after <= before {
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
