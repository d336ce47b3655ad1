package integration

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// In each phase of a rotation of a three-node control plane the endpoint
// (the node the control-plane name points at) is asked last: the others
// one at a time by ordinal, then the reconciler moves the name to a node
// that applied the phase, and the old endpoint is asked only once the
// record's TTL has passed since, while the name points at an applied node.
func TestCARotationAsksTheEndpointLastAfterTheNameLeftIt(t *testing.T) {
	s, c := rotationStack(t)
	id, vms, bundles := s.readyNodes(t)
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", "", s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	s.step(t, c)
	var endpoints []int64
	for _, phase := range []string{"trusting", "signing", "distrusting"} {
		wantPhase(t, s.rotationOf(t, id), phase, "NodeNotReported")
		endpoints = append(endpoints, s.steeredPhase(t, c, id, vms, bundles))
		s.step(t, c)
		if phase == "signing" {
			c.Set(2 * time.Minute) // the distrust wait
			s.step(t, c)
		}
	}
	if r := s.rotationOf(t, id).CARotation; r.Phase != "done" || r.State != "succeeded" {
		t.Fatalf("rotation ended %+v", r)
	}
	if endpoints[0] == endpoints[1] || endpoints[1] == endpoints[2] {
		t.Fatalf("the name stayed on one node across phases: %v", endpoints)
	}
}

// A move the DNS API refuses holds nothing up: the name stays on the
// endpoint, the cluster says its DNS is not configured, and the endpoint
// is asked once the TTL has passed from the refused try.
func TestCARotationAsksTheEndpointAnywayWhenTheDNSAPIRefusesTheMove(t *testing.T) {
	s, c := rotationStack(t)
	id, vms, bundles := s.readyNodes(t)
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/rotate-ca", "", s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("rotate-ca: %d %s", r.Status, r.Body)
	}
	s.step(t, c)
	for i := 1; i < len(vms); i++ {
		s.wantAskedOnly(t, vms, vms[i].id)
		s.mustRenew(t, vms[i], bundles[i])
	}
	s.sim.SetFaults(simulator.Faults{FailDNS: true})
	s.step(t, c)
	if got := s.endpointVM(t, id); got != vms[0].id {
		t.Fatalf("the name points at %d after a refused move, want it kept on %d", got, vms[0].id)
	}
	if v := s.rotationOf(t, id); v.DNSConfigured || v.DNSError == "" {
		t.Fatalf("dns_configured %v (%q) after a refused move, want false with why", v.DNSConfigured, v.DNSError)
	}
	s.wantAskedOnly(t, vms, 0)
	c.Set(time.Second)
	s.wantAskedOnly(t, vms, vms[0].id)
}

// steeredPhase drives one phase of a rotation and answers the node the
// name points at once it is done.
func (s *stack) steeredPhase(t *testing.T, c *fixedClock, id int64, vms []vmProof, bundles []bundleBody) int64 {
	t.Helper()
	endpoint := s.endpointVM(t, id)
	if got := s.recordedEndpoint(t, id); got != endpoint {
		t.Fatalf("the cluster records endpoint %d, the name points at %d", got, endpoint)
	}
	applied := map[int64]bool{}
	for i, vm := range vms { // by ordinal, the endpoint left out
		if vm.id == endpoint {
			continue
		}
		s.wantAskedOnly(t, vms, vm.id)
		s.mustRenew(t, vm, bundles[i])
		applied[vm.id] = true
	}
	s.wantAskedOnly(t, vms, 0) // the endpoint is not asked while the name points at it
	s.step(t, c)
	moved := s.endpointVM(t, id)
	if !applied[moved] || s.recordedEndpoint(t, id) != moved {
		t.Fatalf("the name moved from %d to %d (recorded %d), want a node that applied the phase", endpoint, moved, s.recordedEndpoint(t, id))
	}
	if shown := s.rotationOf(t, id).EndpointVMID; shown != moved {
		t.Fatalf("GET /clusters/{id} shows endpoint_vm_id %d, want %d", shown, moved)
	}
	s.wantAskedOnly(t, vms, 0) // clients may still hold the old address for the record's TTL
	c.Set(time.Second)
	s.wantAskedOnly(t, vms, endpoint)
	if now := s.endpointVM(t, id); now != moved {
		t.Fatalf("the name points at %d when the old endpoint is asked, want %d", now, moved)
	}
	i := slices.IndexFunc(vms, func(v vmProof) bool { return v.id == endpoint })
	s.mustRenew(t, vms[i], bundles[i])
	return moved
}

// wantAskedOnly checks every node's health answer: renew due for the node
// of VM asked only (0: none).
func (s *stack) wantAskedOnly(t *testing.T, vms []vmProof, asked int64) {
	t.Helper()
	for _, vm := range vms {
		want := ""
		if vm.id == asked {
			want = bundle.RenewDue
		}
		s.wantHealthAnswer(t, vm, want)
	}
}

// endpointVM is the VM of the node whose address the cluster's name holds
// in the platform's DNS (the simulator's).
func (s *stack) endpointVM(t *testing.T, id int64) int64 {
	t.Helper()
	recs := s.sim.Records(baseDomain)
	if len(recs) != 1 {
		t.Fatalf("dns records %+v, want the control-plane name's one", recs)
	}
	var vm int64
	if err := s.pool.QueryRow(context.Background(), `SELECT vm_id FROM kube_nodes WHERE kube_cluster_id = $1 AND role = 'control-plane'
		AND $2 IN (ipv4, public_ipv4)`, id, recs[0].Value).Scan(&vm); err != nil {
		t.Fatalf("the name's address %s is no node's: %v", recs[0].Value, err)
	}
	return vm
}

// recordedEndpoint is the cluster's recorded endpoint (migration 035).
func (s *stack) recordedEndpoint(t *testing.T, id int64) int64 {
	t.Helper()
	var vm *int64
	if err := s.pool.QueryRow(context.Background(), `SELECT endpoint_vm_id FROM kube_clusters WHERE id = $1`, id).Scan(&vm); err != nil || vm == nil {
		t.Fatalf("endpoint_vm_id %v (%v)", vm, err)
	}
	return *vm
}
