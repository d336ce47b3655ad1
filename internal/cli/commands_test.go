package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

func TestCreateClusterSendsOnlyTheFlagsGiven(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", Status: "active",
		ControlPlaneVMIDs: []int64{10, 11, 12}, ControlPlaneDNSName: "exk8s-1-5.k8s.example", DNSConfigured: true, Kubeconfig: "secret"})})
	r := runCLI(t, f, nil, "create", "cluster", "--count", "3", "--image", "1", "--instance-type", "c1.large",
		"--subnet", "2", "--security-group", "7,8", "--public-ipv4", "--cni", "bridge")
	r.want(t, 0)
	r.wantOut(t, "cluster 5 (exk8s-1-5) founded: 3 control-plane VMs [10 11 12], endpoint https://exk8s-1-5.k8s.example:6443\n"+
		"next: k8sapi kubeconfig 5 --merge   (then kubectl get nodes)")
	c := f.callsTo("POST /clusters")[0]
	want := `{"allocate_public_ipv4":true,"cni":"bridge","control_plane_count":3,"control_plane_image_id":1,"control_plane_instance_type":"c1.large","security_group_ids":[7,8],"subnet_id":2}`
	if c.body != want {
		t.Fatalf("body %s\nwant %s", c.body, want)
	}
	if !strings.HasPrefix(c.header.Get("Idempotency-Key"), "k8sapi-cli-") || c.header.Get("Authorization") != "Bearer op-token" {
		t.Fatalf("headers %v", c.header)
	}
	if strings.Contains(r.stdout, "secret") {
		t.Fatal("the table output shows the kubeconfig")
	}
}

// --restore-from CLUSTER:SNAPSHOT is restore_from's two ids.
func TestCreateClusterRestoreFrom(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 6, Name: "exk8s-1-6", Status: "active"})})
	r := runCLI(t, f, nil, "create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "2", "--restore-from", "4:9")
	r.want(t, 0)
	want := `{"control_plane_image_id":1,"control_plane_instance_type":"c1.large","restore_from":{"cluster_id":4,"snapshot_id":9},"subnet_id":2}`
	if c := f.callsTo("POST /clusters")[0]; c.body != want {
		t.Fatalf("body %s\nwant %s", c.body, want)
	}
}

func TestCreateClusterUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"required flag": {"create", "cluster", "--image", "1", "--subnet", "1"},
		"bad int":       {"create", "cluster", "--image", "one", "--instance-type", "c1.large", "--subnet", "1"},
		"unknown flag":  {"create", "cluster", "--nodes", "3"},
		"bad output":    {"create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "-o", "wide"},
		"bad restore":   {"create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--restore-from", "4"},
		"restore junk":  {"create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--restore-from", "4:9x"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			r := runCLI(t, f, nil, args...)
			r.want(t, 2)
			if len(f.calls) != 0 {
				t.Fatal("a usage error called the API")
			}
		})
	}
}

func TestAPIErrorShownAsItCameExit1(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 400, headers: map[string]string{"X-Request-Id": "req-1"},
		body: `{"error":{"code":"invalid_request","message":"subnet_id: not a subnet of your org","request_id":"req-1"}}`})
	r := runCLI(t, f, nil, "create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "99")
	r.want(t, 1)
	if want := "Error: invalid_request: subnet_id: not a subnet of your org (HTTP 400, request_id req-1)\n"; r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}
}

func TestGatewayErrorWithoutRequestID(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters", reply{status: 502, body: `<html>Bad Gateway</html>`})
	r := runCLI(t, f, nil, "get", "clusters")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "Bad Gateway: <html>Bad Gateway</html> (HTTP 502)") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestCreateWaitPrintsEachPhaseChange(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", ControlPlaneVMIDs: []int64{10, 11}, DNSConfigured: true})})
	f.on("GET /clusters/5",
		ok(cluster(5, "active", "pending", "pending", "pending")),
		ok(cluster(5, "active", "bootstrapping", "bundle_fetched", "pending")),
		ok(cluster(5, "active", "bootstrapping", "bundle_fetched", "pending")),
		ok(cluster(5, "active", "bootstrapping", "ready", "apiserver_ready")),
		ok(cluster(5, "active", "ready", "ready", "ready")))
	r := runCLI(t, f, nil, "create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--wait")
	r.want(t, 0)
	r.wantOut(t, `cluster 5 (exk8s-1-5) founded: 2 control-plane VMs [10 11], endpoint https://:6443
13:00:00 cp-0.cluster-5.internal (vm 10): pending
13:00:00 cp-1.cluster-5.internal (vm 11): pending
13:00:00 cluster 5 (exk8s-1-5): bootstrap pending (0/2 nodes ready)
13:00:00 cp-0.cluster-5.internal (vm 10): bundle_fetched
13:00:00 cluster 5 (exk8s-1-5): bootstrap bootstrapping (0/2 nodes ready)
13:00:00 cp-0.cluster-5.internal (vm 10): ready
13:00:00 cp-1.cluster-5.internal (vm 11): apiserver_ready
13:00:00 cluster 5 (exk8s-1-5): bootstrap bootstrapping (1/2 nodes ready)
13:00:00 cp-1.cluster-5.internal (vm 11): ready
13:00:00 cluster 5 (exk8s-1-5): bootstrap ready (2/2 nodes ready)
next: k8sapi kubeconfig 5 --merge   (then kubectl get nodes)`)
}

// With -o json, stdout is the founding's document alone (jq can read
// it) and the wait's lines go to stderr.
func TestCreateWaitJSONKeepsProgressOnStderr(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", ControlPlaneVMIDs: []int64{10}, DNSConfigured: true})})
	f.on("GET /clusters/5", ok(cluster(5, "active", "ready", "ready")))
	r := runCLI(t, f, nil, "create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--wait", "-o", "json")
	r.want(t, 0)
	var doc apitypes.FoundingResult
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.ClusterID != 5 {
		t.Fatalf("stdout is not the document: %v\n%s", err, r.stdout)
	}
	if !strings.Contains(r.stderr, "cluster 5 (exk8s-1-5): bootstrap ready (1/1 nodes ready)") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestCreateWaitEndsWithTheFailedNodesMessage(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters", reply{status: 201, body: mustJSON(apitypes.FoundingResult{ClusterID: 5, Name: "exk8s-1-5", DNSConfigured: true})})
	failed := cluster(5, "active", "failed", "ready", "failed")
	failed.Bootstrap.Nodes[1].Message = `step "installing etcd" failed (exit 1)`
	f.on("GET /clusters/5", ok(failed))
	r := runCLI(t, f, nil, "create", "cluster", "--image", "1", "--instance-type", "c1.large", "--subnet", "1", "--wait")
	r.want(t, 1)
	if !strings.Contains(r.stderr, `cp-1.cluster-5.internal (vm 11): step "installing etcd" failed (exit 1)`) {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestLiveViewRedrawsInPlace(t *testing.T) {
	var out strings.Builder
	v := &liveView{w: &out}
	v.show(now, cluster(5, "active", "pending", "pending"))
	v.show(now.Add(4e9), cluster(5, "active", "ready", "ready"))
	want := "\033[2Kcluster 5 (exk8s-1-5): bootstrap pending (0/1 nodes ready)  [0s]\n" +
		"\033[2K  ..  cp-0.cluster-5.internal      pending                  60s\n" +
		"\033[2A\033[2Kcluster 5 (exk8s-1-5): bootstrap ready (1/1 nodes ready)  [4s]\n" +
		"\033[2K  ok  cp-0.cluster-5.internal      ready                    64s\n"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}
}

func TestGetClustersTables(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(5, "active", "ready", "ready", "ready", "ready"), cluster(6, "founding", "pending")}}))
	runCLI(t, f, nil, "get", "clusters").wantOut(t, `
ID   NAME        STATUS     BOOTSTRAP   NODES   WORKERS   CNI      VERSION   AGE
5    exk8s-1-5   active     ready       3/3     0/0       cilium   v1.35.4   60m
6    exk8s-1-6   founding   pending     0/0     0/0       cilium   v1.35.4   60m`)
	runCLI(t, f, nil, "get", "clusters", "-o", "wide").wantOut(t, `
ID   NAME        STATUS     BOOTSTRAP   NODES   WORKERS   CNI      VERSION   AGE   ENDPOINT                KEY-ALGORITHM   CERTS-EXPIRE
5    exk8s-1-5   active     ready       3/3     0/0       cilium   v1.35.4   60m   exk8s-1-5.k8s.example   ecdsa-p256      <none>
6    exk8s-1-6   founding   pending     0/0     0/0       cilium   v1.35.4   60m   exk8s-1-6.k8s.example   ecdsa-p256      <none>`)
}

func TestGetClustersFollowsNextCursorAndFilters(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters?status=active", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(5, "active", "ready")}, NextCursor: ptr("c2")}))
	f.on("GET /clusters?cursor=c2&status=active", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(7, "active", "ready"), cluster(8, "failed", "pending")}}))
	r := runCLI(t, f, nil, "get", "clusters", "--status", "active", "-o", "json")
	r.want(t, 0)
	var l apitypes.ClusterList
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || len(l.Clusters) != 2 || l.Clusters[1].ID != 7 {
		t.Fatalf("%v %s", err, r.stdout)
	}
	f.on("GET /clusters?limit=1", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(5, "active", "ready")}, NextCursor: ptr("c2")}))
	runCLI(t, f, nil, "get", "clusters", "--limit", "1", "-o", "yaml").want(t, 0)
	if len(f.callsTo("GET /clusters?cursor=c2&limit=1")) != 0 {
		t.Fatal("--limit followed the cursor")
	}
}

func TestGetClusterJSONIsTheAPIsDocument(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters/5", reply{status: 200, body: `{"cluster_id":5,"name":"exk8s-1-5","field_from_the_future":1}`})
	r := runCLI(t, f, nil, "get", "cluster", "5", "-o", "json")
	r.wantOut(t, "{\n  \"cluster_id\": 5,\n  \"field_from_the_future\": 1,\n  \"name\": \"exk8s-1-5\"\n}")
}

// -o yaml is the cluster as a file apply accepts (its kept file, else the
// cluster as it is), the API's document below it as its status.
func TestGetClusterYAMLIsAClusterFile(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters/5", reply{status: 200, body: `{"cluster_id":5,"name":"exk8s-1-5","field_from_the_future":1,"spec":null,` +
		`"actual":{"kind":"Cluster","name":"exk8s-1-5","control_plane":{"count":1,"instance_type":"e2.medium","image_id":1},"subnet_id":1}}`})
	runCLI(t, f, nil, "get", "cluster", "5", "-o", "yaml").wantOut(t, `control_plane:
  count: 1
  image_id: 1
  instance_type: e2.medium
kind: Cluster
name: exk8s-1-5
status:
  cluster_id: 5
  field_from_the_future: 1
  name: exk8s-1-5
subnet_id: 1`)
}

// A cluster argument is an id or a name: the name of the file applied to
// it, or k8sapi's own; a name no cluster has is an error naming the
// command that lists them.
func TestClusterArgumentsAreIDsOrNames(t *testing.T) {
	f := newFakeAPI(t)
	named := cluster(7, "active", "ready")
	named.Spec = &apitypes.ClusterFile{Kind: "Cluster", Name: "demo"}
	f.on("GET /clusters", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(5, "active", "ready"), named}}))
	f.on("GET /clusters/7", ok(named))
	f.on("GET /clusters/5", ok(cluster(5, "active", "ready")))
	runCLI(t, f, nil, "get", "cluster", "demo").wantLines(t, "7    demo   active   ready       0/0     0/0       cilium   v1.35.4   60m")
	runCLI(t, f, nil, "get", "cluster", "exk8s-1-5").want(t, 0)
	r := runCLI(t, f, nil, "describe", "cluster", "nosuch")
	r.want(t, 1)
	if !strings.Contains(r.stderr, `no cluster is named "nosuch" (k8sapi get clusters lists the org's)`) {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestGetNodes(t *testing.T) {
	f := newFakeAPI(t)
	c := cluster(5, "active", "failed", "ready", "failed")
	c.Bootstrap.Nodes[1].Message = "etcd failed\nlast lines"
	c.Nodes[0].NodeHealth = apitypes.NodeHealth{Health: "healthy"}
	c.Nodes[1].NodeHealth = apitypes.NodeHealth{Health: "unhealthy", UnhealthySince: &unhealthySince}
	f.on("GET /clusters/5", ok(c))
	runCLI(t, f, nil, "get", "nodes", "5", "-o", "wide").wantOut(t, `
NAME                      ROLE            VM-ID   ORDINAL   VERSION   PHASE    HEALTH         IPV4        SINCE   IPV6     PUBLIC-IPV4   MESSAGE
cp-0.cluster-5.internal   control-plane   10      0         v1.35.4   ready    healthy        10.0.0.10   60s     <none>   <none>        <none>
cp-1.cluster-5.internal   control-plane   11      1         v1.35.4   failed   unhealthy 3m   10.0.0.11   60s     <none>   <none>        etcd failed`)
}

func TestIDArgumentsAreChecked(t *testing.T) {
	for _, args := range [][]string{{"get", "cluster", "0"}, {"get", "cluster"}, {"delete", "cluster", "0"}, {"rebootstrap", "5", "x"}} {
		f := newFakeAPI(t)
		runCLI(t, f, nil, args...).want(t, 2)
	}
}

func TestNotFoundIsExit1(t *testing.T) {
	f := newFakeAPI(t)
	r := runCLI(t, f, nil, "get", "cluster", "9")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "not_found: no route GET /clusters/9 (HTTP 404, request_id req-404)") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestDescribeCluster(t *testing.T) {
	f := newFakeAPI(t)
	c := cluster(5, "active", "bootstrapping", "ready")
	exp := now.Add(365 * 24 * 3600e9)
	c.CertificatesExpireAt = &exp
	c.DNSRecords = []apitypes.DNSRecord{{Type: "A", Name: "exk8s-1-5.k8s.example", Value: "203.0.113.7", TTL: 300}}
	c.Replacements = []apitypes.NodeReplacement{{ID: 3, ClusterID: 5, OldVMID: 9, OldNodeName: "cp-3.cluster-5.internal", NewNodeName: "cp-0.cluster-5.internal",
		State: "done", CreatedAt: now.Add(-2 * time.Hour)}}
	c.Nodes[0].DeprecatedAPIs = []apitypes.RequestedAPI{
		{DeprecatedAPI: apitypes.DeprecatedAPI{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Resource: "flowschemas", RemovedRelease: "1.32"}, LastSeen: now},
		{DeprecatedAPI: apitypes.DeprecatedAPI{Group: "apps", Version: "v1beta1", Resource: "deployments", Subresource: "scale"}, LastSeen: now}}
	f.on("GET /clusters/5", ok(c))
	f.on("GET /clusters/5/nodes/10/bootstrap", reply{status: 200, body: `{"cluster_id":5,"vm_id":10,"node_name":"cp-0.cluster-5.internal","phase":"ready","message":"","updated_at":"2026-11-24T12:59:00Z",
		"window":{"opened_at":"2026-11-24T12:00:00Z","closes_at":"2026-11-24T12:59:00Z","open":false},
		"fetches":[{"vm_id":10,"request_id":"r-2","outcome":"served","fetched_at":"2026-11-24T12:10:00Z"}]}`})
	f.on("GET /clusters/5/kubeconfigs", reply{status: 200, body: `{"kubeconfigs":[{"serial":"ab12","issued_at":"2026-11-24T12:30:00Z","expires_at":"2026-11-24T13:30:00Z","issued_by":"principal 4","request_id":"r-9"}]}`})
	f.on("GET /clusters/5/events", reply{status: 200, body: `{"events":[{"at":"2026-11-24T12:30:00Z","principal":"org:1:token:5e884898da28","action":"kubeconfig.issue","resource":"/clusters/5/kubeconfig","outcome":"succeeded","status":201,"request_id":"r-9"}]}`})
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	r.wantLines(t,
		"Status:                 active",
		"Bootstrap:              bootstrapping (1/1 nodes ready)",
		"  Certificates:         2027-11-24T13:00:00Z",
		"  exk8s-1-5.k8s.example 300 IN A 203.0.113.7",
		"  3: cp-3.cluster-5.internal (vm 9) by cp-0.cluster-5.internal: done since 2026-11-24T11:00:00Z",
		"  ca:                   2036-11-24T12:00:00Z",
		"  cp-0.cluster-5.internal (vm 10):",
		"    Deprecated:         flowschemas flowcontrol.apiserver.k8s.io/v1beta3 (removed in 1.32, last 2026-11-24T13:00:00Z)",
		"                        deployments/scale apps/v1beta1 (removed in <none>, last 2026-11-24T13:00:00Z)",
		"    Window:             closed (opened 2026-11-24T12:00:00Z, closes 2026-11-24T12:59:00Z)",
		"        2026-11-24T12:10:00Z  served           r-2",
		"  ab12     2026-11-24T12:30:00Z   2026-11-24T13:30:00Z   principal 4   r-9",
		"  2026-11-24T12:30:00Z   kubeconfig.issue   succeeded (201)   org:1:token:5e884898da28   /clusters/5/kubeconfig   r-9")
}

// describe shows the cluster's conditions and each pool's, the truth of
// where each stands.
func TestDescribeShowsConditions(t *testing.T) {
	f := newFakeAPI(t)
	c := cluster(5, "deleting", "ready")
	since := time.Date(2026, 11, 24, 12, 40, 0, 0, time.UTC)
	c.Conditions = []apitypes.Condition{
		{Type: apitypes.ConditionReady, Status: apitypes.ConditionFalse, Reason: "Deleting", Message: "deleting failed", LastTransitionTime: since},
		{Type: apitypes.ConditionProgressing, Status: apitypes.ConditionTrue, Reason: "Retrying", Message: "deleting failed", LastTransitionTime: since},
	}
	c.NodePools = []apitypes.NodePool{{Name: "web", Count: 1, State: "active", Nodes: []apitypes.WorkerView{},
		Conditions: []apitypes.Condition{{Type: apitypes.ConditionReady, Status: apitypes.ConditionTrue, Reason: "Active", LastTransitionTime: since}}}}
	f.on("GET /clusters/5", ok(c))
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	r.wantLines(t,
		"Conditions:",
		"  Ready        False    Deleting     2026-11-24T12:40:00Z  deleting failed",
		"  Progressing  True     Retrying     2026-11-24T12:40:00Z  deleting failed",
		"    Conditions:",
		"      Ready        True     Active       2026-11-24T12:40:00Z")
}

func TestDescribeWithoutTheKubeconfigsRouteSaysWhy(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters/5", ok(cluster(5, "founding", "pending")))
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Kubeconfigs:            unavailable: not_found:") || !strings.Contains(r.stdout, "Events:                 unavailable: not_found:") {
		t.Fatal(r.stdout)
	}
}

func TestDeleteWaitPollsUntilDeleted(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE /clusters/5", reply{status: 502, body: `{"error":{"code":"compute_failed","message":"the compute API failed","request_id":"r"}}`})
	f.on("GET /clusters/5", ok(cluster(5, "deleting", "ready")), ok(cluster(5, "deleted", "ready")))
	r := runCLI(t, f, nil, "delete", "cluster", "5", "--wait")
	r.want(t, 0)
	r.wantOut(t, "cluster 5 (exk8s-1-5) deleted")
	// Without --wait the refusal is the answer.
	f.on("DELETE /clusters/5", reply{status: 409, body: `{"error":{"code":"founding_in_progress","message":"still founding","request_id":"r"}}`})
	runCLI(t, f, nil, "delete", "cluster", "5").want(t, 1)
}

func TestRebootstrap(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/nodes/11/rebootstrap", reply{status: 200, body: `{"cluster_id":5,"vm_id":11,"node_name":"cp-1","phase":"pending","message":"","updated_at":"2026-11-24T13:00:00Z",
		"window":{"opened_at":"2026-11-24T13:00:00Z","closes_at":"2026-11-24T14:00:00Z","open":true},"fetches":[]}`})
	runCLI(t, f, nil, "rebootstrap", "5", "11").wantOut(t,
		"node cp-1 (vm 11): bootstrap re-opened, phase pending, window open (opened 2026-11-24T13:00:00Z, closes 2026-11-24T14:00:00Z)")
}

func TestReplaceNode(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/nodes/11/replace", reply{status: 202, body: `{"replacement_id":3,"cluster_id":5,"old_vm_id":11,
		"old_node_name":"cp-1","new_node_name":"cp-4","state":"replacing","created_at":"2026-11-24T13:00:00Z"}`})
	runCLI(t, f, nil, "nodes", "replace", "5", "11").wantOut(t,
		"node cp-1 (vm 11) is being replaced by cp-4 (replacement 3, replacing); follow it with: k8sapi describe cluster 5")
	runCLI(t, newFakeAPI(t), nil, "nodes", "replace", "5", "x").want(t, 2)
}

func TestSettingsFlagsThenEnvThenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("url: http://file\ntoken: file-token\n"), 0o600)
	env := envMap{"K8SAPI_URL": "http://env"}.get
	cases := []struct {
		flags settings
		want  settings
	}{
		{settings{}, settings{URL: "http://env", Token: "file-token"}},
		{settings{URL: "http://flag", Token: "flag-token"}, settings{URL: "http://flag", Token: "flag-token"}},
	}
	for _, c := range cases {
		got, err := resolveSettings(c.flags, env, path, true)
		if err != nil || got != c.want {
			t.Fatalf("%+v: %+v %v", c.flags, got, err)
		}
	}
	if _, err := resolveSettings(settings{}, env, filepath.Join(dir, "absent.yaml"), true); err == nil {
		t.Fatal("a named config file that is absent is no error")
	}
	os.WriteFile(path, []byte("url: http://file\ntokn: typo\n"), 0o600)
	if _, err := resolveSettings(settings{}, env, path, true); err == nil {
		t.Fatal("an unknown key in the config file is no error")
	}
}

func TestNoSettingsIsAUsageError(t *testing.T) {
	r := runCLI(t, nil, map[string]string{"K8SAPI_TOKEN": ""}, "get", "clusters")
	r.want(t, 2)
	if !strings.Contains(r.stderr, "no API URL: pass --url, set K8SAPI_URL") {
		t.Fatal(r.stderr)
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runCLI(t, nil, nil, "completion", shell)
		r.want(t, 0)
		if !strings.Contains(r.stdout, "k8sapi") {
			t.Fatalf("%s: %s", shell, r.stdout[:100])
		}
	}
}

func TestCompletionOffersClusterIDs(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters", ok(apitypes.ClusterList{Clusters: []apitypes.ClusterView{cluster(5, "active", "ready")}}))
	r := runCLI(t, f, nil, "__complete", "get", "cluster", "")
	if !strings.HasPrefix(r.stdout, "5\texk8s-1-5 (active)\n") {
		t.Fatalf("%q", r.stdout)
	}
}

// describe shows each node's steps with how long each took and the one it
// is on now, counted to the CLI's clock.
func TestDescribeShowsWhereTheTimeWent(t *testing.T) {
	f := newFakeAPI(t)
	c := cluster(5, "active", "bootstrapping", "etcd_started")
	opened := now.Add(-time.Minute)
	c.Bootstrap.Nodes[0].Steps = []apitypes.BootstrapStep{
		{Phase: "bundle_fetched", StartedAt: opened, EndedAt: opened.Add(3 * time.Second), Seconds: 3},
		{Phase: "etcd_started", StartedAt: opened.Add(3 * time.Second), EndedAt: now.Add(-12 * time.Second), Seconds: 45.25},
	}
	c.Bootstrap.Nodes[0].Running = &apitypes.RunningStep{Phase: "kubelet_started", StartedAt: now.Add(-12 * time.Second)}
	f.on("GET /clusters/5", ok(c))
	f.on("GET /clusters/5/nodes/10/bootstrap", reply{status: 200, body: `{"cluster_id":5,"vm_id":10,"node_name":"cp-0.cluster-5.internal","phase":"etcd_started","message":"","updated_at":"2026-11-24T12:59:48Z",
		"window":{"opened_at":"2026-11-24T12:59:00Z","closes_at":"2026-11-24T13:59:00Z","open":true},"fetches":[]}`})
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	r.wantLines(t,
		"    Steps:",
		"      bundle_fetched                 3s  (2026-11-24T12:59:00Z to 2026-11-24T12:59:03Z)",
		"      etcd_started                45.3s  (2026-11-24T12:59:03Z to 2026-11-24T12:59:48Z)",
		"    Running:            kubelet_started for 12s (since 2026-11-24T12:59:48Z)")
}

// A typo in a nested command exits 2 with a suggestion (cobra alone
// prints the group's help and exits 0).
func TestNestedTyposExitNonZeroWithASuggestion(t *testing.T) {
	for args, want := range map[[2]string]string{
		{"get", "clsuters"}:     `unknown command "clsuters" for "k8sapi get"; did you mean clusters?`,
		{"get", "node"}:         `unknown command "node" for "k8sapi get"; did you mean nodes?`,
		{"node-pools", "lsit"}:  `unknown command "lsit" for "k8sapi node-pools"; did you mean list?`,
		{"etcd-snapshots", "x"}: `unknown command "x" for "k8sapi etcd-snapshots" (k8sapi etcd-snapshots --help lists them)`,
	} {
		f := newFakeAPI(t)
		r := runCLI(t, f, nil, args[0], args[1], "1")
		r.want(t, 2)
		if !strings.Contains(r.stderr, want) || len(f.calls) != 0 {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	r := runCLI(t, nil, nil, "version")
	r.want(t, 0)
	if !strings.HasPrefix(r.stdout, "k8sapi dev (commit ") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

// No API listening: the error says which URL and how it is named.
func TestConnectionRefusedAsksWhetherTheAPIRuns(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	r := runCLI(t, nil, map[string]string{"K8SAPI_URL": url}, "get", "clusters")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "nothing answers at "+url+" (connection refused): is the API at $K8SAPI_URL running?") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// An API error with a next step names it as a CLI command, not a route.
func TestAPIErrorsHintAtCommands(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/nodes/10/replace", reply{status: 409, body: `{"error":{"code":"would_lose_quorum","message":"replacing this node now could lose etcd's quorum; nothing was changed","request_id":"r1"}}`})
	r := runCLI(t, f, nil, "nodes", "replace", "5", "10")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "hint: wait until every control-plane node is ready (k8sapi get nodes CLUSTER), then replace one at a time") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// wait pool follows a pool's operation to its end, naming what it waits
// for when nothing changes (off a terminal), and a failed pool is exit 1.
func TestWaitPool(t *testing.T) {
	f := newFakeAPI(t)
	scaling := apitypes.NodePool{Name: "workers", Count: 2, State: "scaling", Nodes: []apitypes.WorkerView{{Phase: "ready"}}}
	done := apitypes.NodePool{Name: "workers", Count: 2, State: "active", Nodes: []apitypes.WorkerView{{Phase: "ready"}, {Phase: "ready"}}}
	f.on("GET /clusters/5/node-pools/workers", ok(scaling), ok(scaling), ok(done))
	r := runCLI(t, f, nil, "wait", "pool", "5", "workers")
	r.want(t, 0)
	r.wantOut(t, "13:00:00 node pool workers: scaling, 1/2 workers ready\n13:00:00 node pool workers: active, 2/2 workers ready")
	failed := apitypes.NodePool{Name: "workers", Count: 2, State: "failed", StateReason: "compute refused"}
	f.on("GET /clusters/5/node-pools/workers", ok(failed))
	r = runCLI(t, f, nil, "wait", "pool", "5", "workers")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "node pool workers failed: compute refused") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestChangeLinesHeartbeatNamesWhatItWaitsFor(t *testing.T) {
	var out strings.Builder
	at := now
	a := &app{stdout: &out, now: func() time.Time { return at }}
	l := &changeLines{a: a, what: "node pool workers of cluster 5"}
	l.show("scaling")
	at = at.Add(10 * time.Second)
	l.show("scaling")
	at = at.Add(heartbeatEvery)
	l.show("scaling")
	want := "13:00:00 scaling\n13:00:40 still waiting for node pool workers of cluster 5: scaling\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
