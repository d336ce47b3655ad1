package integration

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/cli"
)

// k8sapiCLI runs the operator's CLI against the stack as org 1's operator
// and returns its exit status and output.
func (s *stack) k8sapiCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	s.t.Setenv("XDG_CONFIG_HOME", s.t.TempDir()) // no operator's config file
	args = append([]string{"--url", s.api.URL, "--token", s.Token(1)}, args...)
	code := cli.Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The CLI founds a three-node cluster and waits for it while its VMs
// fetch and report, lists it, describes it and deletes it, over the real
// routes.
func TestCLIFoundsListsDescribesAndDeletesACluster(t *testing.T) {
	s := newStack(t)
	type run struct {
		code        int
		out, errOut string
	}
	done := make(chan run, 1)
	go func() {
		code, out, errOut := s.k8sapiCLI("create", "cluster", "--count", "3", "--image", "1", "--instance-type", "e2.medium", "--subnet", "1", "--wait", "--timeout", "2m")
		done <- run{code, out, errOut}
	}()
	id, vms := s.foundedByCLI(t)
	s.bootAll(t, vms)
	var r run
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("create --wait did not return")
	}
	if r.code != 0 || !strings.Contains(r.out, "bootstrap ready (3/3 nodes ready)") {
		t.Fatalf("create --wait: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	s.checkListedAndDescribed(t, id)
	code, out, errOut := s.k8sapiCLI("delete", "cluster", itoa(id), "--wait")
	if code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}
}

// foundedByCLI waits for the CLI's founding to show in the org's list and
// returns the cluster and its VMs.
func (s *stack) foundedByCLI(t *testing.T) (int64, []int64) {
	for range 600 {
		var l struct {
			Clusters []struct {
				ID     int64   `json:"cluster_id"`
				Status string  `json:"status"`
				VMs    []int64 `json:"control_plane_vm_ids"`
			} `json:"clusters"`
		}
		_, out, _ := s.k8sapiCLI("get", "clusters", "-o", "json")
		if json.Unmarshal([]byte(out), &l) == nil && len(l.Clusters) == 1 && l.Clusters[0].Status == "active" {
			return l.Clusters[0].ID, l.Clusters[0].VMs
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the CLI's cluster never became active")
	return 0, nil
}

// bootAll plays the VMs: each fetches its bundle and reports every phase.
func (s *stack) bootAll(t *testing.T, vms []int64) {
	for i, id := range vms {
		s.boot(t, id, i == 0)
	}
}

// boot plays one VM: it fetches its bundle and reports every phase (the
// initial node's addons too).
func (s *stack) boot(t *testing.T, id int64, initial bool) {
	vm := s.proof(id)
	if r := s.FetchBundle(vm.id, vm.imds, vm.access); r.Status != 200 {
		t.Fatalf("bundle: %d", r.Status)
	}
	phases := []string{"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "ready"}
	if initial {
		phases = []string{"prerequisites_installed", "etcd_started", "kubelet_started", "apiserver_ready", "addons_installed", "ready"}
	}
	for _, p := range phases {
		s.mustReport(vm, `{"phase":"`+p+`"}`, 204)
	}
}

func (s *stack) checkListedAndDescribed(t *testing.T, id int64) {
	_, table, _ := s.k8sapiCLI("get", "clusters")
	if !regexp.MustCompile(`(?m)^` + itoa(id) + ` +exk8s-1-\w+ +active +ready +3/3 +0/0 +cilium `).MatchString(table) {
		t.Fatalf("get clusters:\n%s", table)
	}
	_, nodes, _ := s.k8sapiCLI("get", "nodes", itoa(id))
	if strings.Count(nodes, " ready ") != 3 {
		t.Fatalf("get nodes:\n%s", nodes)
	}
	code, described, errOut := s.k8sapiCLI("describe", "cluster", itoa(id))
	if code != 0 || strings.Count(described, "Window:             closed") != 3 || strings.Count(described, " served ") != 3 {
		t.Fatalf("describe: %d %s\n%s", code, errOut, described)
	}
	code, _, errOut = s.k8sapiCLI("get", "cluster", "999999")
	if code != 1 || !strings.Contains(errOut, "Error: not_found: ") || !strings.Contains(errOut, "request_id ") {
		t.Fatalf("get an absent cluster: %d %s", code, errOut)
	}
}
