package integration

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// reconcile runs ReconcilerFunction's pass once, as its own database user,
// looking at a new node again 200 ms after the last look (a run claims
// until nothing is due: a shorter wait would keep one run looking).
func (s *stack) reconcile(t *testing.T) reconciler.Report {
	token, err := simulator.IssuePrincipalToken(context.Background(), s.pool, 0, simulator.ScopeService, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&reconciler.Reconciler{Deps: s.reconciler, ServiceToken: token, RetryAfter: 200 * time.Millisecond}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The CLI scales a one-node control plane to three and waits while the
// reconciler makes each new node, one at a time, and each VM fetches its
// bundle (in join mode) and reports; the routes, the reconciler and the
// VMs each as their own function's database user.
func TestCLIScalesTheControlPlane(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.OneNode)
	s.bootAll(t, res.ControlPlaneVMIDs)
	code, out, errOut := s.k8sapiCLI("scale", "control-plane", itoa(res.ClusterID), "--count", "2")
	if code != 1 || !strings.Contains(errOut, "invalid_control_plane_count: control_plane_count must be 1, 3 or 5, not 2") {
		t.Fatalf("scale to 2: exit %d\n%s\n%s", code, out, errOut)
	}
	r, booted := s.driveScaling(t, res.ClusterID, res.ControlPlaneVMIDs, "scale", "control-plane", itoa(res.ClusterID), "--count", "3", "--wait", "--timeout", "2m")
	if r[0] != "0" || !strings.Contains(r[1], "has 3 nodes, every one ready") {
		t.Fatalf("scale --wait: exit %s\n%s\n%s", r[0], r[1], r[2])
	}
	if len(booted) != 3 {
		t.Fatalf("VMs %v, want the founding's and two new", booted)
	}
}

// driveScaling runs the CLI with args while the reconciler makes each new
// control-plane node of cluster id, one at a time, and each new VM (beside
// booted) fetches its bundle in join mode and reports; it returns the
// CLI's exit, stdout and stderr, and every VM booted.
func (s *stack) driveScaling(t *testing.T, id int64, booted []int64, args ...string) ([]string, []int64) {
	t.Helper()
	done := make(chan []string, 1)
	go func() {
		code, out, errOut := s.k8sapiCLI(args...)
		done <- []string{itoa(int64(code)), out, errOut}
	}()
	booted = slices.Clone(booted)
	for range 600 {
		select {
		case r := <-done:
			return r, booted
		default:
		}
		s.reconcile(t)
		vms := s.getCluster(t, id).ControlPlaneVMIDs
		if len(vms) > len(booted)+1 {
			t.Fatalf("VMs %v after %v: more than one new member at a time", vms, booted)
		}
		for _, vm := range vms {
			if !slices.Contains(booted, vm) {
				booted = append(booted, vm)
				s.checkJoins(t, vm)
				s.boot(t, vm, false)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%v did not return", args)
	return nil, nil
}

// checkJoins: a new node's bundle joins the running etcd and names only
// its own member to its API server.
func (s *stack) checkJoins(t *testing.T, vm int64) {
	files := s.bundleFiles(vm)
	if !strings.Contains(files["/etc/systemd/system/etcd.service"], "--initial-cluster-state=existing") {
		t.Errorf("VM %d's etcd does not join the running cluster", vm)
	}
	if !strings.Contains(files["/etc/kubernetes/manifests/kube-apiserver.yaml"], "--etcd-servers=https://127.0.0.1:2379\n") {
		t.Errorf("VM %d's API server names other members", vm)
	}
}

// getCluster is GET /clusters/{id} as org 1's operator.
func (s *stack) getCluster(t *testing.T, id int64) apitypes.ClusterView {
	var v apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id), "", s.Bearer(1)).JSON(t, &v)
	return v
}
