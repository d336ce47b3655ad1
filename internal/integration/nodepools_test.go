package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// A pool is created, shown with its cluster, scaled up and down and
// deleted; each answer holds to the document, and the VMs live are exactly
// the ones the pool's rows name.
func TestNodePoolLifecycle(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	p := s.AddPool(1, id, stacktest.TwoWorkers)
	if p.State != "active" || p.Count != 2 || len(p.Nodes) != 2 || p.SubnetID != 1 || p.Labels["tier"] != "web" || len(p.Taints) != 1 {
		t.Fatalf("created pool %+v, want active with 2 workers in the cluster's subnet, its labels and taint", p)
	}
	if !strings.HasPrefix(p.Nodes[0].Name, "workers-2.cluster-") || p.Nodes[0].IPv4 == "" {
		t.Errorf("first worker %+v, want named workers-2.cluster-… with an address", p.Nodes[0])
	}
	var c apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1)).JSON(t, &c)
	if len(c.Nodes) != 1 || len(c.ControlPlaneVMIDs) != 1 || len(c.NodePools) != 1 || len(c.NodePools[0].Nodes) != 2 {
		t.Errorf("GET cluster: %d control-plane nodes, %d pools; want 1 and the pool with its 2 workers", len(c.Nodes), len(c.NodePools))
	}
	assertPoolCount(t, s, id, "workers", "3", 3)
	assertPoolCount(t, s, id, "workers", "1", 1)
	assertLiveVMs(t, s, 2)
	r := stacktest.Do(t, http.MethodDelete, s.PoolsURL(id, "workers"), "", s.Bearer(1))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"state":"deleted"`) {
		t.Fatalf("DELETE = %d %s, want 200 deleted", r.Status, r.Body)
	}
	assertLiveVMs(t, s, 1)
	if r := stacktest.Do(t, http.MethodGet, s.PoolsURL(id, "workers"), "", s.Bearer(1)); r.Status != http.StatusNotFound {
		t.Errorf("GET a deleted pool = %d, want 404", r.Status)
	}
	s.AddPool(1, id, stacktest.TwoWorkers) // a deleted pool's name is free again
}

// assertPoolCount scales the pool to count and checks it settles with n workers.
func assertPoolCount(t *testing.T, s *stack, id int64, name, count string, n int) {
	t.Helper()
	r := stacktest.Do(t, http.MethodPatch, s.PoolsURL(id, name), `{"count":`+count+`}`, s.Bearer(1))
	var p apitypes.NodePool
	if r.JSON(t, &p); r.Status != http.StatusOK || p.State != "active" || p.Count != n || len(p.Nodes) != n {
		t.Fatalf("PATCH count %s = %d %s, want 200 active with %d workers", count, r.Status, r.Body, n)
	}
}

// assertLiveVMs: n VMs live, each one a node row of an active cluster.
func assertLiveVMs(t *testing.T, s *stack, n int) {
	t.Helper()
	live, err := s.sim.LiveInstances(context.Background())
	if err != nil || len(live) != n {
		t.Fatalf("%d live VMs (%v), want %d", len(live), err, n)
	}
	for _, vm := range live {
		var owned bool
		if err := s.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM kube_nodes WHERE vm_id = $1)`, vm.ID).Scan(&owned); err != nil || !owned {
			t.Errorf("live VM %d is no node's (%v)", vm.ID, err)
		}
	}
}

// Bad input is a 400 naming every field at fault; nothing is created.
func TestNodePoolRejectsBadInput(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	for body, want := range map[string]string{
		`{}`: "name: is required; count: is required; instance_type: is required; image_id: is required",
		`{"name":"Bad_Name","count":101,"instance_type":"E2","image_id":0,"subnet_id":-1}`: "name: must be a DNS label: lowercase letters, digits and '-', starting with a letter, at most 32 characters; " +
			"count: must be 0 to 100; instance_type: must be lowercase letters, digits, '.' and '-', at most 64 characters; " +
			"image_id: must be a positive integer; subnet_id: must be a positive integer",
		`{"name":"w","count":1,"instance_type":"e2.medium","image_id":1,"labels":{"kubernetes.io/role":"x","ok":"bad value!"}}`: `labels["kubernetes.io/role"]: key must be [prefix/]name: a DNS subdomain prefix outside kubernetes.io and k8s.io (but node.kubernetes.io and kubelet.kubernetes.io), a name of at most 63 letters, digits, '-', '_' or '.'; ` +
			`labels["ok"]: value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
		`{"name":"w","count":1,"instance_type":"e2.medium","image_id":1,"labels":{"k8sapi.excloud.in/node-pool":"other"}}`:                                                            `labels["k8sapi.excloud.in/node-pool"]: is k8sapi's own: every worker carries it, its value the pool's name`,
		`{"name":"w","count":1,"instance_type":"e2.medium","image_id":1,"taints":[{"key":"a","effect":"Never"},{"key":"b","effect":"NoSchedule"},{"key":"b","effect":"NoSchedule"}]}`: "taints[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute; taints[2]: repeats an earlier taint's key and effect",
		`{"name":"w","count":1,"instance_type":"e2.medium","image_id":999}`:                                                                                                           "image_id: no such image",
		`{"name":"w","count":1,"instance_type":"e2.medium","image_id":1,"subnet_id":999}`:                                                                                             "subnet_id: no such subnet",
	} {
		r := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), body, s.Bearer(1))
		var e struct {
			Error struct{ Code, Message string }
		}
		if r.JSON(t, &e); r.Status != http.StatusBadRequest || e.Error.Code != "invalid_request" || e.Error.Message != want {
			t.Errorf("%s = %d %s\nwant 400 invalid_request %q", body, r.Status, r.Body, want)
		}
	}
	if r := stacktest.Do(t, http.MethodPatch, s.PoolsURL(id, "none"), `{"count":-1}`, s.Bearer(1)); r.Status != http.StatusBadRequest {
		t.Errorf("PATCH count -1 = %d %s, want 400", r.Status, r.Body)
	}
	assertLiveVMs(t, s, 1)
}

// A pool on a bridge cluster is refused with the reason (422, nothing
// created): its routes are rendered at founding, so the nodes running
// would have none to the workers.
func TestNodePoolRefusedOnABridgeCluster(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, strings.TrimSuffix(stacktest.OneNode, "}")+`,"cni":"bridge"}`).ClusterID
	r := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, s.Bearer(1))
	var e struct {
		Error struct{ Code, Message string }
	}
	r.JSON(t, &e)
	if r.Status != http.StatusUnprocessableEntity || e.Error.Code != "pools_need_routed_cni" ||
		!strings.Contains(e.Error.Message, "bridge pod network") || !strings.Contains(e.Error.Message, "cni flannel or cilium") {
		t.Fatalf("pool on a bridge cluster = %d %s, want 422 pools_need_routed_cni with the reason", r.Status, r.Body)
	}
	if r := stacktest.Do(t, http.MethodGet, s.PoolsURL(id, "workers"), "", s.Bearer(1)); r.Status != http.StatusNotFound {
		t.Errorf("the refused pool: GET = %d %s, want 404", r.Status, r.Body)
	}
	assertLiveVMs(t, s, 1)
}

// Pools are org-scoped: another org's cluster, and a pool of it, are 404.
func TestNodePoolsAreOrgScoped(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.AddPool(1, id, stacktest.TwoWorkers)
	for _, c := range []struct{ method, url, body string }{
		{http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers},
		{http.MethodGet, s.PoolsURL(id), ""},
		{http.MethodGet, s.PoolsURL(id, "workers"), ""},
		{http.MethodPatch, s.PoolsURL(id, "workers"), `{"count":0}`},
		{http.MethodDelete, s.PoolsURL(id, "workers"), ""},
	} {
		if r := stacktest.Do(t, c.method, c.url, c.body, s.Bearer(2)); r.Status != http.StatusNotFound {
			t.Errorf("org 2: %s %s = %d %s, want 404", c.method, c.url, r.Status, r.Body)
		}
	}
	assertLiveVMs(t, s, 3)
}

// An Idempotency-Key replays the first create (200, the same pool); reused
// with another body it is 409; a second pool of a live name is 409.
func TestNodePoolIdempotency(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	h := s.Bearer(1)
	h["Idempotency-Key"] = "pool-1"
	first := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, h)
	again := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, h)
	if first.Status != http.StatusCreated || again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("create = %d, repeat = %d %s; want 201 then 200 replayed", first.Status, again.Status, again.Body)
	}
	other := strings.Replace(stacktest.TwoWorkers, `"count":2`, `"count":1`, 1)
	if r := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), other, h); r.Status != http.StatusConflict || r.ErrorCode(t) != "idempotency_key_reused" {
		t.Errorf("key reused with another body = %d %s, want 409 idempotency_key_reused", r.Status, r.Body)
	}
	if r := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, s.Bearer(1)); r.Status != http.StatusConflict || r.ErrorCode(t) != "node_pool_exists" {
		t.Errorf("a second pool of the name = %d %s, want 409 node_pool_exists", r.Status, r.Body)
	}
	assertLiveVMs(t, s, 3)
}

// A create whose second VM the compute API refuses is turned back: the
// first VM is deleted, the pool ends failed saying why, and it can be
// deleted.
func TestNodePoolCreateFailureIsTurnedBack(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	if r := stacktest.Do(t, http.MethodPost, s.PoolsURL(id), stacktest.TwoWorkers, s.Bearer(1)); r.Status != http.StatusBadGateway || r.ErrorCode(t) != "compute_failed" {
		t.Fatalf("= %d %s, want 502 compute_failed", r.Status, r.Body)
	}
	assertLiveVMs(t, s, 1)
	var p apitypes.NodePool
	stacktest.Do(t, http.MethodGet, s.PoolsURL(id, "workers"), "", s.Bearer(1)).JSON(t, &p)
	if p.State != "failed" || !strings.HasPrefix(p.StateReason, "compute_failed: ") || len(p.Nodes) != 0 {
		t.Errorf("pool %+v, want failed with the reason and no workers", p)
	}
	if r := stacktest.Do(t, http.MethodPatch, s.PoolsURL(id, "workers"), `{"count":1}`, s.Bearer(1)); r.Status != http.StatusConflict || r.ErrorCode(t) != "node_pool_busy" {
		t.Errorf("scaling a failed pool = %d %s, want 409 node_pool_busy", r.Status, r.Body)
	}
	if r := stacktest.Do(t, http.MethodDelete, s.PoolsURL(id, "workers"), "", s.Bearer(1)); r.Status != http.StatusOK {
		t.Errorf("deleting a failed pool = %d %s, want 200", r.Status, r.Body)
	}
}

// A scale-up whose second new VM is refused keeps the workers it finished
// and says so; the VM it could not make is not left behind.
func TestNodePoolScaleUpFailureKeepsFinishedWorkers(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.AddPool(1, id, stacktest.TwoWorkers)
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	if r := stacktest.Do(t, http.MethodPatch, s.PoolsURL(id, "workers"), `{"count":5}`, s.Bearer(1)); r.Status != http.StatusBadGateway {
		t.Fatalf("= %d %s, want 502", r.Status, r.Body)
	}
	var p apitypes.NodePool
	stacktest.Do(t, http.MethodGet, s.PoolsURL(id, "workers"), "", s.Bearer(1)).JSON(t, &p)
	if p.State != "active" || p.Count != 2 || len(p.Nodes) != 2 || !strings.Contains(p.StateReason, "scaling to 5 failed") {
		t.Errorf("pool %+v, want active with its 2 workers and the reason", p)
	}
	assertLiveVMs(t, s, 3)
}

// A cluster's deletion deletes its workers' VMs too and ends its pools.
func TestClusterDeletionRemovesItsWorkers(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.AddPool(1, id, stacktest.TwoWorkers)
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1)); r.Status != http.StatusOK {
		t.Fatalf("DELETE cluster = %d %s", r.Status, r.Body)
	}
	if live, _ := s.sim.LiveInstances(context.Background()); len(live) != 0 {
		t.Errorf("%d VMs live after the cluster's deletion", len(live))
	}
	var state string
	if err := s.pool.QueryRow(context.Background(), `SELECT state FROM node_pools`).Scan(&state); err != nil || state != "deleted" {
		t.Errorf("pool %q (%v), want deleted with its cluster", state, err)
	}
}

// A worker's VM proves who it is like any VM, and is still never served a
// control-plane bundle (its keys, its etcd): 404.
func TestWorkerGetsNoControlPlaneBundle(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	vm := s.AddPool(1, id, stacktest.TwoWorkers).Nodes[0].VMID
	imds, access := s.VMCredentials(vm)
	if r := s.FetchBundle(vm, imds, access); r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Errorf("worker's control-plane bundle = %d, want 404 and no key", r.Status)
	}
}

// Every pool operation is in the cluster's audit trail.
func TestNodePoolOperationsAreAudited(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	s.AddPool(1, id, stacktest.TwoWorkers)
	assertPoolCount(t, s, id, "workers", "1", 1)
	stacktest.Do(t, http.MethodDelete, s.PoolsURL(id, "workers"), "", s.Bearer(1))
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id)+"/events", "", s.Bearer(1))
	for _, action := range []string{"node_pool.create", "node_pool.scale", "node_pool.delete"} {
		if !strings.Contains(string(r.Body), `"action":"`+action+`"`) {
			t.Errorf("events %s lack %s", r.Body, action)
		}
	}
}
