package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// Off a terminal a wait with nothing changing prints a heartbeat every
// 30 s that names what it waits for, and why no node moves when none
// fetched its bundle.
func TestLineViewHeartbeat(t *testing.T) {
	var out strings.Builder
	v := &lineView{w: &out, phases: map[int64]string{}}
	c := cluster(5, "active", "pending", "pending")
	v.show(now, c)
	v.show(now.Add(29*time.Second), c) // quiet: under 30 s
	v.show(now.Add(31*time.Second), c)
	v.show(now.Add(40*time.Second), c) // quiet: 9 s after the heartbeat
	v.show(now.Add(61*time.Second), c)
	want := "13:00:00 cp-0.cluster-5.internal (vm 10): pending\n" +
		"13:00:00 cluster 5 (exk8s-1-5): bootstrap pending (0/1 nodes ready)\n" +
		"13:00:31 still waiting for cluster 5 (exk8s-1-5): bootstrap pending (0/1 nodes ready), no change for 31s (no VM has fetched its bundle yet; under make local VMs boot only with BOOT_VMS=1)\n" +
		"13:01:01 still waiting for cluster 5 (exk8s-1-5): bootstrap pending (0/1 nodes ready), no change for 1m1s (no VM has fetched its bundle yet; under make local VMs boot only with BOOT_VMS=1)\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

var createArgs = []string{"create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--wait", "--idempotency-key", "k-1"}

const resumeLine = "  k8sapi create cluster --image 1 --instance-type c1.large --subnet 1 --wait --idempotency-key k-1"

// A gateway's 502 to the founding itself, or during the wait, leaves the
// founding to the reconciler: --wait follows it by asking again with the
// same Idempotency-Key (and reading again), and only a wait that ends
// before the founding does prints the key and the command that follows it.
func TestGateway502IsFollowedByTheIdempotencyKey(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 502, body: "<html>Bad Gateway</html>"},
		reply{status: 409, body: `{"error":{"code":"founding_in_progress","message":"the cluster is still being founded"}}`},
		reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", DNSConfigured: true})})
	f.on("GET /clusters/5", ok(cluster(5, "active", "pending", "pending")), reply{status: 502, body: "<html>Bad Gateway</html>"},
		ok(cluster(5, "active", "ready", "ready")))
	r := runCLI(t, f, nil, createArgs...)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "the founding goes on (Bad Gateway: <html>Bad Gateway</html> (HTTP 502)); asking again with Idempotency-Key k-1\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
	for _, c := range f.callsTo("POST /clusters") {
		if c.header.Get("Idempotency-Key") != "k-1" {
			t.Fatalf("asked again with key %q", c.header.Get("Idempotency-Key"))
		}
	}

	f = newFakeAPI(t)
	f.on("POST /clusters", reply{status: 502, body: "<html>Bad Gateway</html>"})
	r = runCLI(t, f, nil, append(createArgs, "--timeout", "20ms")...)
	r.want(t, 1)
	if !strings.Contains(r.stderr, "the founding goes on without this call (Idempotency-Key k-1); follow it again with:\n"+resumeLine+" --timeout 20ms\n") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// Ctrl-C during a wait is an interruption, not a timeout, and says how to
// resume; the key is added to a command line that had none.
func TestInterruptedWaitPrintsHowToResume(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", DNSConfigured: true})})
	f.on("GET /clusters/5", ok(cluster(5, "active", "pending", "pending")))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	var out, errOut strings.Builder
	a := &app{stdout: &out, stderr: &errOut, getenv: func(k string) string {
		return map[string]string{"K8SAPI_URL": f.srv.URL, "K8SAPI_TOKEN": "t"}[k]
	}, now: func() time.Time { return now }, pollEvery: time.Millisecond, home: t.TempDir(), ctx: ctx}
	code := a.main([]string{"create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--wait"})
	key := f.callsTo("POST /clusters")[0].header.Get("Idempotency-Key")
	if code != 1 || !strings.HasPrefix(errOut.String(), "Error: interrupted") ||
		!strings.Contains(errOut.String(), "k8sapi create cluster --image 1 --instance-type c1.large --subnet 1 --wait --idempotency-key "+key+"\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// A node that failed ends the wait with its message alone: nothing to
// resume.
func TestFailedNodeHasNoResumeHint(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", DNSConfigured: true})})
	f.on("GET /clusters/5", ok(cluster(5, "active", "failed", "failed")))
	r := runCLI(t, f, nil, createArgs...)
	r.want(t, 1)
	if strings.Contains(r.stderr, "follow it again") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// replace --wait follows the new node's phase and the old node's leaving
// until both are done.
func TestReplaceWaitFollowsTheNewNode(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/nodes/11/replace", reply{status: 202, body: `{"replacement_id":3,"cluster_id":5,"old_vm_id":11,
		"old_node_name":"cp-1.cluster-5.internal","new_node_name":"cp-2.cluster-5.internal","state":"replacing"}`})
	before := cluster(5, "active", "ready", "ready", "ready") // cp-0 (vm 10), cp-1 (vm 11)
	joining := cluster(5, "active", "bootstrapping", "ready", "ready", "etcd_started")
	done := cluster(5, "active", "ready", "ready", "ready", "ready")
	done.ControlPlaneVMIDs = []int64{10, 12}
	f.on("GET /clusters/5", ok(before), ok(joining), ok(joining), ok(done))
	r := runCLI(t, f, nil, "nodes", "replace", "5", "11", "--wait")
	r.want(t, 0)
	r.wantOut(t, `node cp-1.cluster-5.internal (vm 11) is being replaced by cp-2.cluster-5.internal (replacement 3, replacing)
13:00:00 cp-2.cluster-5.internal (vm 0): no VM yet; old node cp-1.cluster-5.internal (vm 11): retiring
13:00:00 cp-2.cluster-5.internal (vm 12): etcd_started; old node cp-1.cluster-5.internal (vm 11): retiring
13:00:00 cp-2.cluster-5.internal (vm 12): ready; old node cp-1.cluster-5.internal (vm 11): gone
node cp-2.cluster-5.internal replaced cp-1.cluster-5.internal: ready, the old VM 11 deleted`)
}
