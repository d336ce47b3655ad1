package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

func pool(name, state string, count int, phases ...string) apitypes.NodePool {
	p := apitypes.NodePool{Name: name, State: state, Count: count, InstanceType: "e2.medium", ImageID: 1, SubnetID: 2,
		Labels: map[string]string{"tier": "web"}, Taints: []apitypes.Taint{{Key: "dedicated", Value: "web", Effect: "NoSchedule"}},
		CreatedAt: now.Add(-time.Hour)}
	for i, ph := range phases {
		p.Nodes = append(p.Nodes, apitypes.WorkerView{NodeView: apitypes.NodeView{VMID: int64(20 + i), Name: name + "-" + jsonInt(int64(2+i))}, Phase: ph})
	}
	return p
}

func TestNodePoolsCreateSendsTheFlagsGiven(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/node-pools", reply{status: 201, body: mustJSON(pool("workers", "active", 2, "pending", "pending"))})
	r := runCLI(t, f, nil, "node-pools", "create", "5", "--name", "workers", "--count", "2", "--instance-type", "e2.medium",
		"--image", "1", "--label", "tier=web", "--taint", "dedicated=web:NoSchedule")
	r.want(t, 0)
	r.wantOut(t, `NAME      STATE    COUNT   READY   INSTANCE-TYPE   IMAGE   AGE
workers   active   2       0/2     e2.medium       1       60m`)
	c := f.callsTo("POST /clusters/5/node-pools")[0]
	want := `{"count":2,"image_id":1,"instance_type":"e2.medium","labels":{"tier":"web"},"name":"workers","taints":[{"key":"dedicated","value":"web","effect":"NoSchedule"}]}`
	if c.body != want || !strings.HasPrefix(c.header.Get("Idempotency-Key"), "k8sapi-cli-") {
		t.Fatalf("body %s, key %q\nwant %s", c.body, c.header.Get("Idempotency-Key"), want)
	}
}

func TestNodePoolsUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"required flag": {"node-pools", "create", "5", "--name", "w", "--count", "1"},
		"bad label":     {"node-pools", "create", "5", "--name", "w", "--count", "1", "--instance-type", "t", "--image", "1", "--label", "tier"},
		"bad taint":     {"node-pools", "create", "5", "--name", "w", "--count", "1", "--instance-type", "t", "--image", "1", "--taint", "a=b"},
		"no count":      {"node-pools", "scale", "5", "workers"},
		"bad id":        {"node-pools", "list", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			runCLI(t, f, nil, args...).want(t, 2)
			if len(f.calls) != 0 {
				t.Fatal("a usage error called the API")
			}
		})
	}
}

func TestNodePoolsListScaleDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /clusters/5/node-pools", ok(map[string]any{"node_pools": []apitypes.NodePool{pool("workers", "active", 2, "ready", "kubelet_started")}}))
	f.on("PATCH /clusters/5/node-pools/workers", ok(pool("workers", "active", 3)))
	f.on("DELETE /clusters/5/node-pools/workers", ok(pool("workers", "deleted", 0)))
	r := runCLI(t, f, nil, "node-pools", "list", "5", "-o", "wide")
	r.want(t, 0)
	r.wantOut(t, `NAME      STATE    COUNT   READY   INSTANCE-TYPE   IMAGE   AGE   SUBNET   LABELS     TAINTS                     WORKERS
workers   active   2       1/2     e2.medium       1       60m   2        tier=web   dedicated=web:NoSchedule   workers-2(20,ready),workers-3(21,kubelet_started)`)
	runCLI(t, f, nil, "node-pools", "scale", "5", "workers", "--count", "3").want(t, 0)
	if c := f.callsTo("PATCH /clusters/5/node-pools/workers"); len(c) != 1 || c[0].body != `{"count":3}` {
		t.Fatalf("scale calls %+v", c)
	}
	runCLI(t, f, nil, "node-pools", "delete", "5", "workers").wantLines(t, "workers   deleted   0       0/0     e2.medium       1       60m")
}
