package nodehealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/store"
)

var now = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time { t := now.Add(-d); return &t }

// node is a ready node of role that last reported reported ago (0: never),
// failing since failing ago (0: passing).
func node(id int64, role string, pool int64, reported, failing time.Duration) store.Node {
	n := store.Node{ID: id, VMID: 100 + id, Name: "n" + string(rune('0'+id)), Role: role, PoolID: pool, ReadyAt: ago(time.Hour)}
	if reported > 0 {
		n.Health.ReportedAt = ago(reported)
		n.Health.Checks = []byte(`{"kubelet":{"ok":true}}`)
	}
	if failing > 0 {
		n.Health.FailingSince = ago(failing)
		n.Health.Checks = []byte(`{"kubelet":{"ok":false,"message":"healthz: connection refused"}}`)
	}
	return n
}

const (
	cp     = store.RoleControlPlane
	worker = store.RoleWorker
	dead   = 10 * time.Minute // silent for longer than unhealthy_after
	fresh  = 10 * time.Second
)

func TestReportValidate(t *testing.T) {
	ok := apitypes.HealthCheck{OK: true}
	cases := []struct {
		name string
		role clusterfacts.Role
		r    Report
		want string
	}{
		{"worker ok", clusterfacts.Worker, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": ok}}, ""},
		{"control plane ok", clusterfacts.ControlPlane, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": ok, "etcd": ok, "apiserver": ok}}, ""},
		{"absent", clusterfacts.Worker, Report{}, "checks: is required, an object of kubelet"},
		{"missing", clusterfacts.ControlPlane, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": ok}},
			"checks.etcd: is required; checks.apiserver: is required"},
		{"foreign", clusterfacts.Worker, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": ok, "etcd": ok}},
			"checks.etcd: is no check of this node; its checks are kubelet"},
		{"long", clusterfacts.Worker, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": {Message: strings.Repeat("x", 513)}}},
			"checks.kubelet.message: must be at most 512 bytes"},
		{"nul", clusterfacts.Worker, Report{Checks: map[string]apitypes.HealthCheck{"kubelet": {Message: "a\x00b"}}},
			"checks.kubelet.message: must not contain NUL characters"},
	}
	cp := map[string]apitypes.HealthCheck{"kubelet": ok, "etcd": ok, "apiserver": ok}
	flows := apitypes.DeprecatedAPI{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Resource: "flowschemas", RemovedRelease: "1.32"}
	core := apitypes.DeprecatedAPI{Version: "v1", Resource: "componentstatuses", Subresource: "status"}
	for _, d := range []struct {
		name string
		role clusterfacts.Role
		apis []apitypes.DeprecatedAPI
		want string
	}{
		{"deprecated ok", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{flows, core}, ""},
		{"deprecated none", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{}, ""},
		{"deprecated of a worker", clusterfacts.Worker, []apitypes.DeprecatedAPI{}, "deprecated_apis: is a control-plane node's only"},
		{"deprecated too many", clusterfacts.ControlPlane, manyAPIs(apitypes.MaxDeprecatedAPIs + 1), "deprecated_apis: must hold at most 64 APIs"},
		{"deprecated twice", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{flows, core, flows}, "deprecated_apis[2]: is a duplicate"},
		{"deprecated unnamed", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{{Group: "x.k8s.io"}},
			"deprecated_apis[0].version: must be 1 to 63 bytes of letters, digits, '.' and '-'; deprecated_apis[0].resource: must be 1 to 63"},
		{"deprecated long", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{{Group: strings.Repeat("g", 254), Version: "v1", Resource: "r"}},
			"deprecated_apis[0].group: must be 0 to 253 bytes of letters"},
		{"deprecated odd", clusterfacts.ControlPlane, []apitypes.DeprecatedAPI{{Version: "v1", Resource: "r s", RemovedRelease: "soon"}},
			"deprecated_apis[0].resource: must be 1 to 63 bytes of letters, digits, '.' and '-'; deprecated_apis[0].removed_release: must be a release such as \"1.36\", or \"\""},
	} {
		checks := cp
		if d.role == clusterfacts.Worker {
			checks = map[string]apitypes.HealthCheck{"kubelet": ok}
		}
		cases = append(cases, struct {
			name string
			role clusterfacts.Role
			r    Report
			want string
		}{d.name, d.role, Report{Checks: checks, DeprecatedAPIs: d.apis}, d.want})
	}
	for _, c := range cases {
		err := c.r.Validate(c.role)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (err == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name  string
		n     store.Node
		state string
		since *time.Time
	}{
		{"never reported", node(1, worker, 1, 0, 0), apitypes.HealthUnknown, nil},
		{"reporting", node(1, worker, 1, fresh, 0), apitypes.Healthy, nil},
		{"within the grace", node(1, worker, 1, Grace, 0), apitypes.Healthy, nil},
		{"silent", node(1, worker, 1, Grace+time.Second, 0), apitypes.Unhealthy, ago(Grace + time.Second)},
		{"failing", node(1, worker, 1, fresh, time.Minute), apitypes.Unhealthy, ago(time.Minute)},
	}
	for _, c := range cases {
		j := Judge(c.n, now)
		if j.State != c.state || (c.since != nil && !j.Since.Equal(*c.since)) {
			t.Errorf("%s: %+v, want %s since %v", c.name, j, c.state, c.since)
		}
	}
	if j := Judge(node(1, worker, 1, fresh, time.Minute), now); j.Reason != "failing: kubelet healthz: connection refused" {
		t.Errorf("reason %q", j.Reason)
	}
}

// settings is a cluster with remediation after 5 minutes, at most 40% of a
// pool unhealthy.
var settings = store.Cluster{ID: 7, UnhealthyAfterSeconds: 300, MaxUnhealthyPercent: 40}

func decide(t *testing.T, running []string, nodes ...store.Node) []Decision {
	t.Helper()
	return Decide(Situation{Cluster: settings, Nodes: nodes, Pools: []store.Pool{{ID: 1, Name: "web"}}, Running: running, Now: now})
}

// oneDecision is the only decision, failing the test unless there is one.
func oneDecision(t *testing.T, ds []Decision) Decision {
	t.Helper()
	if len(ds) != 1 {
		t.Fatalf("%d decisions, want 1: %+v", len(ds), ds)
	}
	return ds[0]
}

func TestDecideReplacesADeadWorker(t *testing.T) {
	d := oneDecision(t, decide(t, nil, node(1, worker, 1, dead, 0), node(2, worker, 1, fresh, 0), node(3, worker, 1, fresh, 0)))
	if !d.Take || d.Node.ID != 1 || !strings.HasPrefix(d.Why, "no health report since") {
		t.Errorf("%+v", d)
	}
}

func TestDecideWaitsForUnhealthyAfter(t *testing.T) {
	if ds := decide(t, nil, node(1, worker, 1, 4*time.Minute, 0), node(2, worker, 1, fresh, 0)); len(ds) != 0 {
		t.Errorf("a node unhealthy for 4 minutes of 5 was decided on: %+v", ds)
	}
	if ds := decide(t, nil, node(1, worker, 1, 0, 0)); len(ds) != 0 {
		t.Errorf("a node that never reported was decided on: %+v", ds)
	}
}

func TestDecideOff(t *testing.T) {
	off := settings
	off.UnhealthyAfterSeconds = 0
	if ds := Decide(Situation{Cluster: off, Nodes: []store.Node{node(1, worker, 1, dead, 0)}, Now: now}); len(ds) != 0 {
		t.Errorf("unhealthy_after 0 decided: %+v", ds)
	}
}

func TestDecideRefusesWhileAnotherOperationRuns(t *testing.T) {
	d := oneDecision(t, decide(t, []string{"node pool web is scaling"}, node(1, worker, 1, dead, 0), node(2, worker, 1, fresh, 0), node(3, worker, 1, fresh, 0)))
	if d.Take || d.Reason != "another operation runs on the cluster: node pool web is scaling" {
		t.Errorf("%+v", d)
	}
}

func TestDecideRefusesTooManyUnhealthyWorkers(t *testing.T) {
	// 2 of 4 (50%) unhealthy: more than 40%.
	ds := decide(t, nil, node(1, worker, 1, dead, 0), node(2, worker, 1, dead, 0), node(3, worker, 1, fresh, 0), node(4, worker, 1, fresh, 0))
	for _, d := range ds {
		if d.Take || d.Reason != "too many unhealthy: 2 of the 4 workers of node pool web are unhealthy, more than max_unhealthy_percent (40%)" {
			t.Errorf("%+v", d)
		}
	}
	if len(ds) != 2 {
		t.Errorf("%d decisions, want 2", len(ds))
	}
}

func TestDecideRefusesToLoseQuorum(t *testing.T) {
	// Two of three members dead: the one left is no majority of the two others.
	ds := decide(t, nil, node(1, cp, 0, dead, 0), node(2, cp, 0, dead, 0), node(3, cp, 0, fresh, 0))
	for _, d := range ds {
		if d.Take || !strings.HasPrefix(d.Reason, "quorum at risk: 1 of the 2 other control-plane nodes are healthy") {
			t.Errorf("%+v", d)
		}
	}
	d := oneDecision(t, decide(t, nil, node(1, cp, 0, dead, 0)))
	if d.Take || !strings.Contains(d.Reason, "the cluster's only control-plane node") {
		t.Errorf("%+v", d)
	}
}

func TestDecideOneAtATimeControlPlaneFirst(t *testing.T) {
	ds := decide(t, nil, node(1, worker, 1, 20*time.Minute, 0), node(2, worker, 1, fresh, 0), node(3, worker, 1, fresh, 0),
		node(4, cp, 0, dead, 0), node(5, cp, 0, fresh, 0), node(6, cp, 0, fresh, 0))
	if len(ds) != 2 || !ds[0].Take || ds[0].Node.ID != 4 || ds[1].Take ||
		ds[1].Reason != "one node is remediated at a time: n4 is replaced first" {
		t.Errorf("%+v", ds)
	}
}

// manyAPIs is n distinct deprecated APIs.
func manyAPIs(n int) []apitypes.DeprecatedAPI {
	out := make([]apitypes.DeprecatedAPI, n)
	for i := range out {
		out[i] = apitypes.DeprecatedAPI{Group: "x.k8s.io", Version: "v1beta1", Resource: fmt.Sprintf("r%d", i)}
	}
	return out
}
