package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// membership asks (no body) or reports (body) the etcd membership route as vm.
func (s *stack) membership(vm vmProof, body string) stacktest.Response {
	s.t.Helper()
	method, headers := http.MethodGet, map[string]string{"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access}
	if body != "" {
		method, headers["Content-Type"] = http.MethodPost, "application/json"
	}
	return stacktest.Do(s.t, method, s.api.URL+"/bootstrap/control-plane/"+itoa(vm.id)+"/etcd-membership", body, headers)
}

// growTo scales cluster id's control plane to n, playing each new VM.
func (s *stack) growTo(t *testing.T, id int64, n int) {
	if r := stacktest.Do(t, http.MethodPatch, s.api.URL+"/clusters/"+itoa(id), `{"control_plane_count":`+itoa(int64(n))+`}`, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("scale to %d = %d %s", n, r.Status, r.Body)
	}
	booted := slices.Clone(s.getCluster(t, id).ControlPlaneVMIDs)
	for range 200 {
		s.reconcile(t)
		vms := s.getCluster(t, id).ControlPlaneVMIDs
		for _, vm := range vms {
			if !slices.Contains(booted, vm) {
				booted = append(booted, vm)
				s.boot(t, vm, false)
			}
		}
		if len(booted) == n && readyNodes(s.getCluster(t, id)) == n {
			s.settleScaling(t)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the control plane did not grow to %d", n)
}

// settleScaling runs the reconciler until it ends the scaling: a waiting
// step is due again only after the reconciler's retry interval.
func (s *stack) settleScaling(t *testing.T) {
	for range 50 {
		if s.reconcile(t).Scaled > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the reconciler did not end the scaling")
}

func readyNodes(c apitypes.ClusterView) int {
	ready := 0
	for _, n := range c.Bootstrap.Nodes {
		if n.Phase == "ready" {
			ready++
		}
	}
	return ready
}

// playRemovingMember plays every control-plane VM's membership timer once:
// only the lowest-ordinal one (the first VM) is answered; the others, the
// leaving one included, get 204 and cannot report. The removing member
// reports each member it was answered. It returns the names removed.
func (s *stack) playRemovingMember(t *testing.T, vms []int64) []string {
	var removed []string
	for i, vm := range vms {
		r := s.membership(s.proof(vm), "")
		if i > 0 {
			if r.Status != http.StatusNoContent {
				t.Fatalf("VM %d (not the removing member) asked = %d %s, want 204", vm, r.Status, r.Body)
			}
			continue
		}
		if r.Status == http.StatusNoContent {
			continue
		}
		var answer struct {
			Remove []struct{ Name string } `json:"remove"`
		}
		r.JSON(t, &answer)
		for _, m := range answer.Remove {
			leaving := vms[len(vms)-1]
			if rep := s.membership(s.proof(leaving), `{"name":"`+m.Name+`"}`); rep.Status != http.StatusNotFound {
				t.Fatalf("the leaving VM %d reported its own removal = %d %s, want 404", leaving, rep.Status, rep.Body)
			}
			if rep := s.membership(s.proof(vm), `{"name":"`+m.Name+`"}`); rep.Status != http.StatusOK {
				t.Fatalf("report of %s = %d %s, want 200", m.Name, rep.Status, rep.Body)
			}
			removed = append(removed, m.Name)
		}
	}
	return removed
}

// The control plane shrinks 5 → 3 (the API) → 1 (the CLI with --wait):
// one member at a time, the highest ordinal first; each leaving VM is
// deleted only once the removing member (the lowest-ordinal ready node,
// played as its timer would) reported its etcd removal; the leaving node
// is never answered nor taken at its word. The retired names are on the
// etcd CRL and never handed out again; the refusals answer as stated.
func TestShrinkingTheControlPlaneThroughTheRemovingMember(t *testing.T) {
	s := newStack(t, withShortDNSTTL)
	res := s.Found(1, stacktest.OneNode)
	s.bootAll(t, res.ControlPlaneVMIDs)
	s.growTo(t, res.ClusterID, 5)
	vms := s.getCluster(t, res.ClusterID).ControlPlaneVMIDs
	if len(vms) != 5 {
		t.Fatalf("VMs %v, want 5", vms)
	}
	if r := stacktest.Do(t, http.MethodPatch, s.api.URL+"/clusters/"+itoa(res.ClusterID), `{"control_plane_count":4}`, s.Bearer(1)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("scale to 4 = %d %s, want 422", r.Status, r.Body)
	}
	if r := s.playRemovingMember(t, vms); len(r) != 0 {
		t.Fatalf("removed %v with no scaling, want none", r)
	}
	if r := stacktest.Do(t, http.MethodPatch, s.api.URL+"/clusters/"+itoa(res.ClusterID), `{"control_plane_count":3}`, s.Bearer(1)); r.Status != http.StatusAccepted {
		t.Fatalf("scale to 3 = %d %s, want 202", r.Status, r.Body)
	}
	// A waiting step is due again only after the reconciler's retry
	// interval, so the loop sleeps between passes rather than counting them.
	var removed []string
	for range 200 {
		s.reconcile(t)
		now := s.getCluster(t, res.ClusterID).ControlPlaneVMIDs
		removed = append(removed, s.playRemovingMember(t, now)...)
		if len(now) == 3 && s.getCluster(t, res.ClusterID).ControlPlaneCount == 3 && len(removed) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := s.getCluster(t, res.ClusterID).ControlPlaneVMIDs; len(got) != 3 || !slices.Equal(got, vms[:3]) {
		t.Fatalf("VMs %v after 5 → 3, want %v", got, vms[:3])
	}
	if len(removed) != 2 || !strings.HasPrefix(removed[0], "cp-5.") || !strings.HasPrefix(removed[1], "cp-4.") {
		t.Fatalf("removed %v, want cp-5 then cp-4", removed)
	}
	s.shrinkWithTheCLI(t, res.ClusterID)
	s.checkRetired(t, res.ClusterID)
}

// shrinkWithTheCLI scales 3 → 1 with the CLI's --wait while the reconciler
// runs and the removing member plays its timer.
func (s *stack) shrinkWithTheCLI(t *testing.T, id int64) {
	done := make(chan []string, 1)
	go func() {
		code, out, errOut := s.k8sapiCLI("scale", "control-plane", itoa(id), "--count", "1", "--wait", "--timeout", "2m")
		done <- []string{itoa(int64(code)), out, errOut}
	}()
	for range 600 {
		select {
		case r := <-done:
			if r[0] != "0" || !strings.Contains(r[1], "has 1 nodes, every one ready") || !strings.Contains(r[1], "to remove to reach 1") {
				t.Fatalf("scale --count 1 --wait: exit %s\n%s\n%s", r[0], r[1], r[2])
			}
			return
		default:
		}
		s.reconcile(t)
		s.playRemovingMember(t, s.getCluster(t, id).ControlPlaneVMIDs)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("scale --wait did not return")
}

// checkRetired: the four retired members' etcd serials are on the CRL the
// last member is served.
func (s *stack) checkRetired(t *testing.T, id int64) {
	vms := s.getCluster(t, id).ControlPlaneVMIDs
	if len(vms) != 1 {
		t.Fatalf("VMs %v, want one", vms)
	}
	var crl struct {
		Number int64 `json:"number"`
	}
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(vms[0])+"/etcd-crl", "", map[string]string{
		"X-exc-imds-token": s.proof(vms[0]).imds, "Authorization": "Bearer " + s.proof(vms[0]).access})
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &crl) != nil || crl.Number != 4 {
		t.Fatalf("etcd CRL = %d %s, want number 4 (one per retired member)", r.Status, r.Body)
	}
	var names []string
	if err := s.pool.QueryRow(t.Context(), `SELECT array_agg(DISTINCT node_name ORDER BY node_name) FROM etcd_revocations WHERE kube_cluster_id = $1`, id).Scan(&names); err != nil || len(names) != 4 {
		t.Fatalf("revoked %v (%v), want the four retired members", names, err)
	}
}
