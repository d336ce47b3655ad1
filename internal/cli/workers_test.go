package cli

import (
	"time"

	"encoding/json"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// withPools is c's view with node_pools, as the API answers it.
func withPools(c apitypes.ClusterView, pools ...apitypes.NodePool) reply {
	var m map[string]any
	_ = json.Unmarshal([]byte(mustJSON(c)), &m)
	m["node_pools"] = pools
	return ok(m)
}

// webPool is a pool "web" of cluster 5 asked for two workers: one ready,
// one still bootstrapping, and one retiring (a scale-down under way); the
// two new ones run the release an upgrade moves the cluster to.
// A worker's last report, and since when one is unhealthy (three minutes
// before the tests' now).
var (
	reportedAt     = now.Add(-10 * time.Second)
	unhealthySince = now.Add(-3 * time.Minute)
)

func webPool() apitypes.NodePool {
	return apitypes.NodePool{Name: "web", Count: 2, InstanceType: "e2.medium", ImageID: 1, SubnetID: 1, State: "scaling", Nodes: []apitypes.WorkerView{
		{NodeView: apitypes.NodeView{VMID: 20, Ordinal: 3, Name: "web-3.cluster-5.internal", IPv4: "10.0.0.20", KubernetesVersion: "v1.36.3",
			NodeHealth: apitypes.NodeHealth{Health: "healthy", HealthReportedAt: &reportedAt}}, Phase: "ready"},
		{NodeView: apitypes.NodeView{VMID: 21, Ordinal: 4, Name: "web-4.cluster-5.internal", IPv4: "10.0.0.21", KubernetesVersion: "v1.36.3",
			NodeHealth: apitypes.NodeHealth{Health: "unknown"}}, Phase: "bundle_fetched"},
		{NodeView: apitypes.NodeView{VMID: 22, Ordinal: 5, Name: "web-5.cluster-5.internal", IPv4: "10.0.0.22", KubernetesVersion: "v1.35.4",
			NodeHealth: apitypes.NodeHealth{Health: "unhealthy", UnhealthySince: &unhealthySince, UnhealthyReason: "no health report since 2026-11-24T12:57:00Z"}},
			Phase: "ready", Retiring: true},
	}}
}

// Workers are counted in get clusters, listed in get nodes with their
// pool, and described under their pool.
func TestWorkersAreShown(t *testing.T) {
	f := newFakeAPI(t)
	c := cluster(5, "active", "ready", "ready")
	c.UnhealthyAfter, c.MaxUnhealthyPercent = "5m0s", 40
	f.on("GET /clusters", ok(map[string]any{"clusters": []any{json.RawMessage(withPools(c, webPool()).body)}}))
	f.on("GET /clusters/5", withPools(c, webPool()))
	runCLI(t, f, nil, "get", "clusters").wantOut(t, `
ID   NAME        STATUS   BOOTSTRAP   NODES   WORKERS   CNI      VERSION   AGE
5    exk8s-1-5   active   ready       1/1     1/2       cilium   v1.35.4   60m`)
	runCLI(t, f, nil, "get", "nodes", "5").wantOut(t, `
NAME                       ROLE                     VM-ID   ORDINAL   VERSION   PHASE            HEALTH         IPV4        SINCE
cp-0.cluster-5.internal    control-plane            10      0         v1.35.4   ready            <none>         10.0.0.10   60s
web-3.cluster-5.internal   worker (web)             20      3         v1.36.3   ready            healthy        10.0.0.20   -
web-4.cluster-5.internal   worker (web)             21      4         v1.36.3   bundle_fetched   unknown        10.0.0.21   -
web-5.cluster-5.internal   worker (web), retiring   22      5         v1.35.4   ready            unhealthy 3m   10.0.0.22   -`)
	f.on("GET /clusters/5/nodes/10/bootstrap", ok(apitypes.NodeBootstrapDetail{ClusterID: 5, VMID: 10, NodeName: "cp-0.cluster-5.internal", Phase: "ready"}))
	r := runCLI(t, f, nil, "describe", "cluster", "5")
	r.want(t, 0)
	r.wantLines(t,
		"Remediation:            a node unhealthy for 5m0s is replaced (workers while at most 40% of their pool is unhealthy)",
		"Node pools:",
		"  web:",
		"    State:              scaling",
		"    Workers:            1/2 ready",
		"    Instance type:      e2.medium (image 1, subnet 1)",
		"      web-3.cluster-5.internal (vm 20, 10.0.0.20, v1.36.3): ready, healthy, last report 2026-11-24T12:59:50Z",
		"      web-4.cluster-5.internal (vm 21, 10.0.0.21, v1.36.3): bundle_fetched, unknown",
		"      web-5.cluster-5.internal (vm 22, 10.0.0.22, v1.35.4): ready, unhealthy since 2026-11-24T12:57:00Z: no health report since 2026-11-24T12:57:00Z, retiring")
	r.wantLines(t,
		"  cp-0.cluster-5.internal (vm 10):",
		"    Kubernetes:         v1.35.4")
}
