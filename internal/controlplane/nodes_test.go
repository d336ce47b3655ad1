package controlplane

import (
	"testing"

	"github.com/excloud/k8sapi/internal/store"
)

// The control-plane name points at the recorded endpoint while it is
// live with a VM and an address, else at the lowest-ordinal such node;
// never at a worker, a retiring node or one without a VM or address.
func TestEndpointOf(t *testing.T) {
	cp := func(ordinal int, vm int64, ip string, retiring bool) store.Node {
		return store.Node{Role: store.RoleControlPlane, Ordinal: ordinal, VMID: vm, IPv4: ip, Retiring: retiring}
	}
	worker := store.Node{Role: store.RoleWorker, Ordinal: 1, VMID: 90, IPv4: "10.0.0.90"}
	nodes := []store.Node{worker, cp(3, 13, "10.0.0.3", false), cp(1, 11, "10.0.0.1", true), cp(2, 12, "10.0.0.2", false), cp(0, 0, "", false)}
	for _, tc := range []struct {
		recorded, want int64
	}{
		{recorded: 13, want: 13}, // live: kept
		{recorded: 0, want: 12},  // never recorded: the lowest live ordinal
		{recorded: 11, want: 12}, // retiring: moves on
		{recorded: 90, want: 12}, // a worker is never the endpoint
	} {
		c := &store.Cluster{Endpoint: store.Endpoint{VMID: tc.recorded}}
		if got, ok := EndpointOf(c, nodes); !ok || got.VMID != tc.want {
			t.Errorf("recorded %d: endpoint %d (%v), want %d", tc.recorded, got.VMID, ok, tc.want)
		}
	}
	if got, ok := EndpointOf(&store.Cluster{}, []store.Node{worker, cp(1, 11, "", false), cp(2, 12, "10.0.0.2", true)}); ok {
		t.Errorf("no live control-plane node with an address: endpoint %d", got.VMID)
	}
}

// The filters keep their nodes' order and drop what they say.
func TestControlPlaneFilters(t *testing.T) {
	nodes := []store.Node{{Role: store.RoleWorker, VMID: 1}, {Role: store.RoleControlPlane, VMID: 2, Retiring: true},
		{Role: store.RoleControlPlane, VMID: 3}}
	vms := func(ns []store.Node) (out []int64) {
		for _, n := range ns {
			out = append(out, n.VMID)
		}
		return out
	}
	if got := vms(ControlPlaneOf(nodes)); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("ControlPlaneOf: %v, want [2 3]", got)
	}
	if got := vms(LiveControlPlane(nodes)); len(got) != 1 || got[0] != 3 {
		t.Errorf("LiveControlPlane: %v, want [3]", got)
	}
	if ControlPlaneOf(nodes[:1]) != nil {
		t.Error("ControlPlaneOf of workers only is not nil")
	}
}
