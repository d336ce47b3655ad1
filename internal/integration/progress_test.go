package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/jackc/pgx/v5"
)

type nodeBootstrap struct {
	VMID      int64     `json:"vm_id"`
	NodeName  string    `json:"node_name"`
	Phase     string    `json:"phase"`
	Message   string    `json:"message"`
	UpdatedAt time.Time `json:"updated_at"`
	Steps     []struct {
		Phase     string
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
		Seconds   float64
	} `json:"steps"`
	Running *struct {
		Phase     string
		StartedAt time.Time `json:"started_at"`
	} `json:"running"`
}

type clusterBootstrap struct {
	ClusterID int64 `json:"cluster_id"`
	Bootstrap struct {
		State string          `json:"state"`
		Nodes []nodeBootstrap `json:"nodes"`
	} `json:"bootstrap"`
}

// vmProof is one VM's credentials, as its shim holds them.
type vmProof struct {
	id           int64
	imds, access string
}

func (s *stack) proof(vmID int64) vmProof {
	imds, access := s.VMCredentials(vmID)
	return vmProof{vmID, imds, access}
}

// report posts a status report as vm and returns the answer.
func (s *stack) report(vm vmProof, body string) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodPost, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/status", body, map[string]string{
		"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access, "Content-Type": "application/json",
	})
}

func (s *stack) mustReport(vm vmProof, body string, status int) {
	s.t.Helper()
	if r := s.report(vm, body); r.Status != status {
		s.t.Fatalf("vm %d reports %s: %d %s, want %d", vm.id, body, r.Status, r.Body, status)
	}
}

// bootstrapOf reads the cluster's bootstrap as its org sees it.
func (s *stack) bootstrapOf(org, clusterID int64) clusterBootstrap {
	s.t.Helper()
	r := stacktest.Do(s.t, http.MethodGet, s.api.URL+"/clusters/"+itoa(clusterID), "", s.Bearer(org))
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET /clusters/%d = %d %s", clusterID, r.Status, r.Body)
	}
	var c clusterBootstrap
	r.JSON(s.t, &c)
	return c
}

// want checks the cluster's state and each node's phase (and message when
// given), by ordinal.
func (c clusterBootstrap) want(t *testing.T, state string, phases ...string) {
	t.Helper()
	got := []string{}
	for _, n := range c.Bootstrap.Nodes {
		got = append(got, n.Phase)
	}
	if c.Bootstrap.State != state || fmt.Sprint(got) != fmt.Sprint(phases) {
		t.Fatalf("bootstrap %s %v, want %s %v", c.Bootstrap.State, got, state, phases)
	}
}

// A cluster's nodes start pending, move on as the VMs fetch and report,
// never move back, and a failure (with its reason) is the cluster's state
// until the node is re-opened.
func TestBootstrapProgressWalk(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	c := s.bootstrapOf(1, res.ClusterID)
	c.want(t, "pending", "pending", "pending", "pending")
	for i, n := range c.Bootstrap.Nodes {
		if n.VMID != res.ControlPlaneVMIDs[i] || n.NodeName != fmt.Sprintf("cp-%d.cluster-%d.internal", i+1, res.ClusterID) ||
			n.Message != "" || n.UpdatedAt.IsZero() {
			t.Errorf("node %d: %+v", i, n)
		}
	}
	vm1, vm2, vm3 := s.proof(res.ControlPlaneVMIDs[0]), s.proof(res.ControlPlaneVMIDs[1]), s.proof(res.ControlPlaneVMIDs[2])

	// k8sapi records the fetch itself.
	if r := s.FetchBundle(vm1.id, vm1.imds, vm1.access); r.Status != http.StatusOK {
		t.Fatalf("bundle: %d %s", r.Status, r.Body)
	}
	fetched := s.bootstrapOf(1, res.ClusterID)
	fetched.want(t, "bootstrapping", "bundle_fetched", "pending", "pending")
	if !fetched.Bootstrap.Nodes[0].UpdatedAt.After(c.Bootstrap.Nodes[0].UpdatedAt) {
		t.Errorf("updated_at did not move: %v", fetched.Bootstrap.Nodes[0].UpdatedAt)
	}

	// Forward, skipping, repeating with a new message; never back.
	s.mustReport(vm1, `{"phase":"prerequisites_installed"}`, 204)
	s.mustReport(vm1, `{"phase":"etcd_started","message":"first"}`, 204)
	s.mustReport(vm1, `{"phase":"etcd_started","message":"again"}`, 204)
	if r := s.report(vm1, `{"phase":"prerequisites_installed"}`); r.Status != 409 || r.ErrorCode(t) != "phase_regression" {
		t.Fatalf("backwards: %d %s", r.Status, r.Body)
	}
	// A second fetch (a reboot) does not move a node that is further along.
	if r := s.FetchBundle(vm1.id, vm1.imds, vm1.access); r.Status != http.StatusOK {
		t.Fatalf("bundle again: %d %s", r.Status, r.Body)
	}
	c = s.bootstrapOf(1, res.ClusterID)
	c.want(t, "bootstrapping", "etcd_started", "pending", "pending")
	if m := c.Bootstrap.Nodes[0].Message; m != "again" {
		t.Errorf("message %q, want the last report's", m)
	}
	s.mustReport(vm1, `{"phase":"apiserver_ready"}`, 204)
	s.mustReport(vm2, `{"phase":"ready"}`, 204) // nothing before ready is required

	// failed: the cluster's state, with the first failure's reason.
	s.mustReport(vm3, `{"phase":"failed","message":"exk8s-install-prereqs: step \"installing etcd\" failed (exit 1)\nSHA-256 MISMATCH"}`, 204)
	s.mustReport(vm3, `{"phase":"failed","message":"bootstrap-userdata: step \"running exk8s-install-prereqs.sh\" failed"}`, 204)
	if r := s.report(vm3, `{"phase":"ready"}`); r.Status != 409 || r.ErrorCode(t) != "bootstrap_failed" {
		t.Fatalf("forward after failed: %d %s", r.Status, r.Body)
	}
	c = s.bootstrapOf(1, res.ClusterID)
	c.want(t, "failed", "apiserver_ready", "ready", "failed")
	if m := c.Bootstrap.Nodes[2].Message; m != "exk8s-install-prereqs: step \"installing etcd\" failed (exit 1)\nSHA-256 MISMATCH" {
		t.Errorf("failed message %q, want the first failure's", m)
	}

	// The list shows the same, and org 2 sees none of it.
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1))
	var list struct{ Clusters []clusterBootstrap }
	r.JSON(t, &list)
	if len(list.Clusters) != 1 || !reflect.DeepEqual(list.Clusters[0].Bootstrap, c.Bootstrap) {
		t.Errorf("list %+v\nget %+v", list.Clusters, c.Bootstrap)
	}
	if r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", s.Bearer(2)); r.Status != http.StatusNotFound {
		t.Errorf("org 2 reads org 1's bootstrap: %d", r.Status)
	}
}

// A cluster is ready when every node is, one report at a time.
func TestBootstrapReachesReady(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3}`)
	vms := []vmProof{s.proof(res.ControlPlaneVMIDs[0]), s.proof(res.ControlPlaneVMIDs[1]), s.proof(res.ControlPlaneVMIDs[2])}
	phases := map[int64][]string{
		vms[0].id: {"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "addons_installed", "ready"},
		vms[1].id: {"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "ready"},
		vms[2].id: {"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "ready"},
	}
	for _, vm := range vms {
		if r := s.FetchBundle(vm.id, vm.imds, vm.access); r.Status != http.StatusOK {
			t.Fatalf("bundle: %d", r.Status)
		}
		for _, p := range phases[vm.id] {
			s.mustReport(vm, `{"phase":"`+p+`"}`, 204)
		}
		if vm.id == vms[0].id {
			s.bootstrapOf(1, res.ClusterID).want(t, "bootstrapping", "ready", "pending", "pending")
		}
	}
	s.bootstrapOf(1, res.ClusterID).want(t, "ready", "ready", "ready", "ready")
}

// Reports racing for one node: the guarded UPDATE lets none of them move
// it backwards, so however they interleave the node ends at the furthest
// phase reported, and every answer is 204 or 409, never a 5xx.
func TestConcurrentReportsNeverMoveBackwards(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	forward := []string{"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "addons_installed", "ready"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 60 {
		p := forward[rand.IntN(len(forward))]
		if i == 59 {
			p = "ready" // at least once
		}
		wg.Go(func() {
			r := s.report(vm, `{"phase":"`+p+`"}`)
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[204]+statuses[409] != 60 || statuses[204] == 0 {
		t.Errorf("statuses %v", statuses)
	}
	s.bootstrapOf(1, res.ClusterID).want(t, "ready", "ready")
}

// A report for a cluster that is not active is refused as the bundle is.
func TestReportForInactiveCluster(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET status = 'failed' WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	if r := s.report(vm, `{"phase":"failed"}`); r.Status != 409 || r.ErrorCode(t) != "cluster_not_active" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	s.bootstrapOf(1, res.ClusterID).want(t, "pending", "pending")
}

// GET /clusters stays two queries (plus the token lookup) however many
// clusters and nodes the org has: the phases come with the nodes.
func TestListQueriesDoNotGrowWithClusters(t *testing.T) {
	s := newStack(t)
	s.servers["ClustersFunction"].DebugCounters = true
	roundTrips := func() string {
		r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1))
		return r.Header.Get(metrics.HeaderDBRoundTrips)
	}
	s.Found(1, stacktest.ThreeNodes)
	one := roundTrips()
	for range 3 {
		s.Found(1, stacktest.ThreeNodes)
	}
	if four := roundTrips(); one != "3" || four != "3" {
		t.Errorf("GET /clusters: %s round trips for one cluster, %s for four; want 3 (token, clusters, nodes)", one, four)
	}
}

// The race a read-then-write would lose, made certain: another writer
// holds the node's row (moved to ready, not yet committed) when a report of
// etcd_started arrives. The report's UPDATE waits for the row, then checks
// its guard against the row as committed, and refuses instead of moving
// the node back.
func TestReportRecheckedAgainstACommittedRace(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE kube_nodes SET phase = 'ready' WHERE vm_id = $1`, vm.id); err != nil {
		t.Fatal(err)
	}
	answer := make(chan stacktest.Response, 1)
	go func() { answer <- s.report(vm, `{"phase":"etcd_started"}`) }()
	waitForLockWaiter(t, s)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.Status != 409 || r.ErrorCode(t) != "phase_regression" {
		t.Fatalf("the racing report: %d %s, want 409 phase_regression", r.Status, r.Body)
	}
	s.bootstrapOf(1, res.ClusterID).want(t, "ready", "ready")
}

// waitForLockWaiter returns once some statement of the test's database
// waits on a lock. It watches on a connection of its own: the stack's pool
// is sized like a function's (two), and both are busy here.
func waitForLockWaiter(t *testing.T, s *stack) {
	t.Helper()
	watcher, err := pgx.ConnectConfig(context.Background(), s.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Close(context.Background()) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var waiting int
		if err := watcher.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the report never waited for the row")
}

// A bundle fetch is at most 3 database round trips, counted by the pgx
// tracer against real PostgreSQL (a batch is one): the proofs with the VM's
// call count, the topology, and the fetch's writes (its record, plus on a
// node's first fetch the window's identities and bundle_fetched, in the
// same batch). Every later fetch sees in the topology that the node moved
// on and its identities are stored.
func TestBundleFetchRecordsItsPhaseOnce(t *testing.T) {
	s := newStack(t)
	s.servers["GetBundleFunction"].DebugCounters = true
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	var trips []string
	for range 2 {
		r := s.FetchBundle(vm.id, vm.imds, vm.access)
		if r.Status != http.StatusOK {
			t.Fatalf("bundle: %d %s", r.Status, r.Body)
		}
		trips = append(trips, r.Header.Get(metrics.HeaderDBRoundTrips))
	}
	if fmt.Sprint(trips) != "[3 3]" {
		t.Errorf("round trips of a first and a second fetch: %v, want [3 3]", trips)
	}
	s.bootstrapOf(1, res.ClusterID).want(t, "bootstrapping", "bundle_fetched")
}
