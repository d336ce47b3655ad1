package integration

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// nodeDetail is GET /clusters/{id}/nodes/{vm_id}/bootstrap.
type nodeDetail struct {
	Phase  string `json:"phase"`
	Window struct {
		OpenedAt time.Time `json:"opened_at"`
		ClosesAt time.Time `json:"closes_at"`
		Open     bool      `json:"open"`
	} `json:"window"`
	Fetches []struct {
		VMID      int64  `json:"vm_id"`
		RequestID string `json:"request_id"`
		Outcome   string `json:"outcome"`
	} `json:"fetches"`
}

func nodeURL(s *stack, clusterID, vmID int64, what string) string {
	return s.api.URL + "/clusters/" + itoa(clusterID) + "/nodes/" + itoa(vmID) + "/" + what
}

// nodeOf reads one node's bootstrap as org 1's operator.
func (s *stack) nodeOf(clusterID, vmID int64) nodeDetail {
	return s.nodeCall(http.MethodGet, clusterID, vmID, "bootstrap")
}

// reopen re-opens a node's bootstrap as org 1's operator.
func (s *stack) reopen(clusterID, vmID int64) nodeDetail {
	return s.nodeCall(http.MethodPost, clusterID, vmID, "rebootstrap")
}

// nodeCall is one of the node bootstrap routes as org 1's operator, which
// must answer 200 with the node's detail.
func (s *stack) nodeCall(method string, clusterID, vmID int64, what string) nodeDetail {
	s.t.Helper()
	r := stacktest.Do(s.t, method, nodeURL(s, clusterID, vmID, what), "", s.Bearer(1))
	if r.Status != http.StatusOK {
		s.t.Fatalf("%s %s: %d %s", method, what, r.Status, r.Body)
	}
	var d nodeDetail
	r.JSON(s.t, &d)
	return d
}

func (s *stack) fetch(vm vmProof, status int, code string) stacktest.Response {
	s.t.Helper()
	r := s.FetchBundle(vm.id, vm.imds, vm.access)
	if r.Status != status || (code != "" && r.ErrorCode(s.t) != code) {
		s.t.Fatalf("fetch: %d %s, want %d %s", r.Status, r.Body, status, code)
	}
	return r
}

// A ready node's bundle is closed: a second fetch is refused (and
// recorded) until its operator re-opens it; then the node starts over
// from pending and may fetch and report again.
func TestReadyNodeIsClosedUntilReopened(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	first := s.fetch(vm, 200, "")
	s.mustReport(vm, `{"phase":"ready"}`, 204)
	refused := s.fetch(vm, 409, "bootstrap_closed")

	d := s.nodeOf(res.ClusterID, vm.id)
	if d.Phase != "ready" || d.Window.Open || len(d.Fetches) != 2 {
		t.Fatalf("after ready: %+v", d)
	}
	// Newest first, each with the request id its answer carried.
	if f := d.Fetches[0]; f.Outcome != "bootstrap_closed" || f.RequestID != refused.Header.Get("X-Request-Id") || f.VMID != vm.id {
		t.Errorf("the refused fetch recorded as %+v", f)
	}
	if f := d.Fetches[1]; f.Outcome != "served" || f.RequestID != first.Header.Get("X-Request-Id") {
		t.Errorf("the served fetch recorded as %+v", f)
	}

	d = s.reopen(res.ClusterID, vm.id)
	if d.Phase != "pending" || !d.Window.Open {
		t.Fatalf("after re-open: %+v", d)
	}
	s.fetch(vm, 200, "")
	// The phases start over: an early phase is no regression any more.
	s.mustReport(vm, `{"phase":"prerequisites_installed"}`, 204)
	s.bootstrapOf(1, res.ClusterID).want(t, "bootstrapping", "prerequisites_installed")
}

// The window closes BOOTSTRAP_WINDOW after founding whatever the phase,
// and a re-open opens it for another window from then (the injected clock
// stands in for the wait).
func TestWindowClosesAndReopens(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.clock.Advance(testWindow - time.Minute)
	s.fetch(vm, 200, "")
	s.clock.Advance(time.Minute)
	s.fetch(vm, 409, "bootstrap_closed")
	if d := s.nodeOf(res.ClusterID, vm.id); d.Window.Open || d.Phase != "bundle_fetched" {
		t.Fatalf("past the window: %+v", d)
	}
	d := s.reopen(res.ClusterID, vm.id)
	if !d.Window.Open || !d.Window.ClosesAt.Equal(d.Window.OpenedAt.Add(testWindow)) {
		t.Fatalf("re-opened window: %+v", d.Window)
	}
	s.fetch(vm, 200, "")
	s.clock.Advance(testWindow)
	s.fetch(vm, 409, "bootstrap_closed")
}

// A failed node takes nothing but failed until it is re-opened; then it
// reports forward from pending again.
func TestReopenLeavesFailed(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.mustReport(vm, `{"phase":"failed","message":"disk"}`, 204)
	s.mustReport(vm, `{"phase":"etcd_started"}`, 409)
	s.reopen(res.ClusterID, vm.id)
	s.mustReport(vm, `{"phase":"etcd_started"}`, 204)
	c := s.bootstrapOf(1, res.ClusterID)
	c.want(t, "bootstrapping", "etcd_started")
	if c.Bootstrap.Nodes[0].Message != "" {
		t.Errorf("the failure's message survived the re-open: %q", c.Bootstrap.Nodes[0].Message)
	}
}

// A re-open of a cluster that is not active is refused, nothing changed.
func TestReopenInactiveCluster(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.mustReport(vm, `{"phase":"ready"}`, 204)
	if _, err := s.pool.Exec(t.Context(), `UPDATE kube_clusters SET status = 'failed' WHERE id = $1`, res.ClusterID); err != nil {
		t.Fatal(err)
	}
	r := stacktest.Do(t, http.MethodPost, nodeURL(s, res.ClusterID, vm.id, "rebootstrap"), "", s.Bearer(1))
	if r.Status != 409 || r.ErrorCode(t) != "cluster_not_active" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if d := s.nodeOf(res.ClusterID, vm.id); d.Phase != "ready" {
		t.Errorf("phase %s after a refused re-open", d.Phase)
	}
}

// Only the operator re-opens: a ready node that reports failed keeps its
// bundle closed (the report is recorded, the right is not given back), may
// report ready again (a renewal that failed, then succeeded), and fetches
// again only after a re-open.
func TestFailedAfterReadyDoesNotReopen(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.fetch(vm, 200, "")
	s.mustReport(vm, `{"phase":"ready"}`, 204)
	s.mustReport(vm, `{"phase":"failed","message":"renewal failed"}`, 204)
	s.fetch(vm, 409, "bootstrap_closed")
	if d := s.nodeOf(res.ClusterID, vm.id); d.Phase != "failed" || d.Window.Open {
		t.Fatalf("after ready then failed: %+v", d)
	}
	s.mustReport(vm, `{"phase":"ready","message":"certificates renewed"}`, 204)
	s.fetch(vm, 409, "bootstrap_closed")
	s.reopen(res.ClusterID, vm.id)
	s.fetch(vm, 200, "")
}

// Fetches inside one window mint nothing: every fetch serves the identities
// the window's first fetch issued; the initial node's system:masters
// identity lives one window's length. A re-open issues new ones.
func TestFetchesInAWindowServeTheSameIdentities(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	admin := "/etc/exk8s/pki/admin.pem"
	var first, second, reopened bundleBody
	s.fetch(vm, 200, "").JSON(t, &first)
	s.fetch(vm, 200, "").JSON(t, &second)
	for _, f := range []string{admin, "/etc/exk8s/pki/kubelet-client.pem", "/etc/exk8s/kubeconfig/admin.kubeconfig"} {
		if first.Files[f] == "" || first.Files[f] != second.Files[f] {
			t.Errorf("%s differs between two fetches of one window", f)
		}
	}
	cert, err := pki.ParseCert([]byte(first.Files[admin]))
	if err != nil {
		t.Fatal(err)
	}
	if life := cert.NotAfter.Sub(s.clock.Now()); life > testWindow {
		t.Errorf("the admin identity lives %s, more than the window's %s", life, testWindow)
	}
	s.reopen(res.ClusterID, vm.id)
	s.fetch(vm, 200, "").JSON(t, &reopened)
	if reopened.Files[admin] == first.Files[admin] {
		t.Error("a re-opened window served the last window's admin identity")
	}
}

// Phases of the initial node are refused from the others.
func TestAddonsInstalledOnlyFromTheInitialNode(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	second := s.proof(res.ControlPlaneVMIDs[1])
	r := s.report(second, `{"phase":"addons_installed"}`)
	if r.Status != http.StatusForbidden || r.ErrorCode(t) != "phase_not_for_this_node" {
		t.Fatalf("addons_installed from node 2: %d %s", r.Status, r.Body)
	}
	s.mustReport(s.proof(res.ControlPlaneVMIDs[0]), `{"phase":"addons_installed"}`, 204)
	if d := s.nodeOf(res.ClusterID, second.id); d.Phase != "pending" {
		t.Errorf("node 2 moved to %s", d.Phase)
	}
}

// One VM fetching in a loop meets its budget (429, Retry-After) and fills
// no table; another VM of the same cluster is not affected.
func TestBundleFetchesAreLimitedPerVM(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm, peer := s.proof(res.ControlPlaneVMIDs[0]), s.proof(res.ControlPlaneVMIDs[1])
	statuses := map[int]int{}
	var last stacktest.Response
	for range 25 {
		last = s.FetchBundle(vm.id, vm.imds, vm.access)
		statuses[last.Status]++
	}
	if statuses[200] != 20 || statuses[429] != 5 || last.ErrorCode(t) != "rate_limited" {
		t.Fatalf("statuses %v, last %s", statuses, last.Body)
	}
	if after, err := strconv.Atoi(last.Header.Get("Retry-After")); err != nil || after < 1 || after > 600 {
		t.Errorf("Retry-After %q, want 1..600 s", last.Header.Get("Retry-After"))
	}
	if n := len(s.nodeOf(res.ClusterID, vm.id).Fetches); n != 20 {
		t.Errorf("%d fetches recorded, want the 20 served", n)
	}
	s.fetch(peer, 200, "")
	s.clock.Advance(10 * time.Minute) // the budget starts over (and the window closes: re-open it)
	s.reopen(res.ClusterID, vm.id)
	s.fetch(vm, 200, "")
}

// Calls that fail the proofs spend nothing of a VM's budget: its proofs and
// its call count share one round trip, and the count is guarded to calls
// whose two tokens both name the VM. Another VM's tokens, or the VM's own
// session with another VM's or no valid bearer token, never count.
func TestFailedProofsSpendNoBudget(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm, other := s.proof(res.ControlPlaneVMIDs[0]), s.proof(res.ControlPlaneVMIDs[1])
	for range 25 {
		for _, c := range []struct {
			imds, access string
			status       int
		}{
			{other.imds, other.access, 403},
			{vm.imds, other.access, 403},
			{vm.imds, "not-a-token", 401},
		} {
			if r := s.FetchBundle(vm.id, c.imds, c.access); r.Status != c.status {
				t.Fatalf("a fetch failing its proofs: %d %s, want %d", r.Status, r.Body, c.status)
			}
		}
	}
	s.fetch(vm, 200, "") // 75 refused calls later, the VM's own first fetch
}
