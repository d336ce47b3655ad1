package faultinjection

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/devstack/gateway"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// These tests kill the real function process: the CreateClusterFunction and
// ClustersFunction binaries run under devstack's local Runtime API behind
// its gateway, as make local runs them, against this package's Postgres,
// the test's moto and the gated simulator. While one compute call is held
// at a gate (so the kill lands while it is in flight, with no timing), the
// process gets SIGKILL, as Lambda does at a timeout: no deferred undo runs,
// no answer is written. Then the held call is let go, as a platform that
// got the request before its caller died finishes it anyway: a VM whose
// create the dead function never saw answered now exists, its id recorded
// nowhere. The reconciler runs in-process with a clock past the dead
// function's lease, and must find and delete that VM too (it repeats the
// create with the same idempotency token).

// realFunctions are the functions whose binaries the tests run.
var realFunctions = []string{"CreateClusterFunction", "ClustersFunction"}

var (
	buildOnce sync.Once
	builtBins map[string]string
	buildErr  error
	builtTmpl *samtemplate.Template
)

// functionBinaries builds the real functions once per test binary.
func functionBinaries(t *testing.T) (*samtemplate.Template, map[string]string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			buildErr = err
			return
		}
		if builtTmpl, buildErr = samtemplate.LoadTemplate(filepath.Join(root, "template.yaml")); buildErr != nil {
			return
		}
		builtBins, buildErr = lambdaruntime.BuildFunctions(context.Background(), root, builtTmpl, filepath.Join(scratch, "bin"), realFunctions...)
	})
	if buildErr != nil {
		t.Fatalf("building the functions: %v", buildErr)
	}
	return builtTmpl, builtBins
}

// processes is the gateway in front of the real function processes.
type processes struct {
	url     string
	runners map[string]*lambdaruntime.Runner
}

// realProcesses starts one warm process per real function, configured as
// make local configures it but pointed at this stack's parts.
func (s *stack) realProcesses() *processes {
	s.t.Helper()
	tmpl, bins := functionBinaries(s.t)
	parts := devstack.Stack{
		DatabaseURL: s.dsn, SimURL: s.simURL, AWSEndpointURL: s.motoEndpoint, KMSKeyID: s.kmsKeyID,
		APIURL: "https://k8sapi.faults.excloud",
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := &processes{runners: map[string]*lambdaruntime.Runner{}}
	invokers := map[string]lambdaruntime.Invoker{}
	routed := &samtemplate.Template{} // the gateway serves these functions' routes only
	for _, id := range realFunctions {
		f, _ := tmpl.Function(id)
		routed.Functions = append(routed.Functions, f)
		env, err := devstack.FunctionEnv(f, parts) // its own database user, as make local gives it
		if err != nil {
			s.t.Fatal(err)
		}
		r, err := lambdaruntime.NewRunner(lambdaruntime.FunctionSpec{Function: f, Binary: bins[id], Env: env}, quiet, io.Discard)
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(r.Close)
		if err := r.Start(); err != nil {
			s.t.Fatal(err)
		}
		p.runners[id], invokers[id] = r, r
	}
	gw, err := gateway.NewGateway(routed, invokers, quiet)
	if err != nil {
		s.t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	s.t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// killAt sends request to the real function behind fn, waits until its
// n-th call at g is held, SIGKILLs the process, and returns the gateway's
// answer.
func (s *stack) killAt(p *processes, fn string, g *gate, n int, method, path, body string) (status int) {
	s.t.Helper()
	g.holdOn(n)
	done := make(chan int, 1)
	go func() { done <- gatewayStatus(method, p.url+path, body, s.Bearer(1)) }()
	<-g.arrived
	s.t.Cleanup(func() { // a test that failed before letGo
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	p.runners[fn].Kill()
	return <-done
}

// gatewayStatus sends one request through the gateway and answers its
// status (0: no answer). Not stacktest.Do: the answer to a killed function
// is the gateway's, outside the API's contract.
func gatewayStatus(method, url, body string, headers map[string]string) int {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// letGo lets the held call reach the simulator and waits for its answer.
func letGo(g *gate) {
	close(g.release)
	<-g.served
}

// The function killed at each remote step of founding: the gateway answers
// 502, the cluster stays founding (committed before the first remote call)
// and shows only the nodes whose VM exists; the reconciler undoes it, and
// the compute call that was in flight, finished after the kill, leaves
// nothing behind.
func TestFunctionKilledAtEachFoundingStep(t *testing.T) {
	for _, c := range foundingSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			p := s.realProcesses()
			g := c.gate(s)
			if st := s.killAt(p, "CreateClusterFunction", g, c.n, http.MethodPost, "/clusters", stacktest.ThreeNodes); st != http.StatusBadGateway {
				t.Fatalf("POST /clusters to a killed function = %d, want the gateway's 502", st)
			}
			s.assertFoundingShowsMadeNodesOnly()
			letGo(g)
			if rep := s.reconcile(); rep.Failed != 1 {
				t.Errorf("reconciler report %+v, want one founding undone", rep)
			}
			if _, _, _, live := s.counts(); live != 0 {
				t.Errorf("%d VMs live after the undo", live)
			}
			s.assertSettled()
		})
	}
}

// assertFoundingShowsMadeNodesOnly: the one cluster is founding, and GET
// lists as nodes, and in its bootstrap, only the nodes whose VM exists (an
// intended node has no VM to report for), all pending.
func (s *stack) assertFoundingShowsMadeNodesOnly() {
	s.t.Helper()
	var id int64
	var made int
	if err := s.pool.QueryRow(context.Background(), `SELECT c.id, count(n.vm_id) FROM kube_clusters c
		JOIN kube_nodes n ON n.kube_cluster_id = c.id WHERE c.status = 'founding' GROUP BY c.id`).Scan(&id, &made); err != nil {
		s.t.Fatalf("the killed founding's cluster: %v", err)
	}
	r := stacktest.Do(s.t, http.MethodGet, s.APIURL+"/clusters/"+strconv.FormatInt(id, 10), "", s.Bearer(1))
	var view struct {
		VMIDs     []int64 `json:"control_plane_vm_ids"`
		Nodes     []any   `json:"nodes"`
		Bootstrap struct {
			State string `json:"state"`
			Nodes []struct {
				VMID  int64  `json:"vm_id"`
				Phase string `json:"phase"`
			} `json:"nodes"`
		} `json:"bootstrap"`
	}
	r.JSON(s.t, &view)
	if len(view.VMIDs) != made || len(view.Nodes) != made || len(view.Bootstrap.Nodes) != made || view.Bootstrap.State != "pending" {
		s.t.Errorf("GET while founding = %s; want %d nodes, bootstrap pending", r.Body, made)
	}
	for _, n := range view.Bootstrap.Nodes {
		if n.VMID == 0 || n.Phase != "pending" {
			s.t.Errorf("bootstrap node %+v, want a VM, pending", n)
		}
	}
}

// The function killed mid-deletion (its second VM delete in flight): the
// cluster stays deleting, and the reconciler finishes the deletion.
func TestFunctionKilledMidDeletion(t *testing.T) {
	s := newStack(t)
	p := s.realProcesses()
	id := s.Found(1, stacktest.ThreeNodes).ClusterID
	if st := s.killAt(p, "ClustersFunction", &s.vmDeletes, 2, http.MethodDelete, "/clusters/"+strconv.FormatInt(id, 10), ""); st != http.StatusBadGateway {
		t.Fatalf("DELETE to a killed function = %d, want the gateway's 502", st)
	}
	if got := s.clusters(); got[0].status != "deleting" {
		t.Fatalf("cluster %+v after the kill, want deleting", got[0])
	}
	letGo(&s.vmDeletes)
	if rep := s.reconcile(); rep.Deleted != 1 {
		t.Errorf("reconciler report %+v, want one deletion finished", rep)
	}
	if got := s.clusters(); got[0].status != "deleted" {
		t.Errorf("cluster %+v, want deleted", got[0])
	}
	if _, _, _, live := s.counts(); live != 0 {
		t.Errorf("%d VMs live after the deletion", live)
	}
	s.assertSettled()
}
