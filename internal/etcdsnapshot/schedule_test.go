package etcdsnapshot

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// The node that takes a snapshot is the lowest-ordinal Ready control-plane
// node with a VM, whatever order the nodes come in; none Ready, none
// chosen; a worker never, Ready or not.
func TestChooseNode(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []store.SnapshotNode
		want  int64
		ok    bool
	}{
		{"none", nil, 0, false},
		{"all ready", []store.SnapshotNode{cp(1, 101, true), cp(2, 102, true), cp(3, 103, true)}, 101, true},
		{"first not ready", []store.SnapshotNode{cp(1, 101, false), cp(2, 102, true), cp(3, 103, true)}, 102, true},
		{"out of order", []store.SnapshotNode{cp(3, 103, true), cp(2, 102, true), cp(1, 101, false)}, 102, true},
		{"ready without a VM", []store.SnapshotNode{cp(1, 0, true), cp(2, 102, true)}, 102, true},
		{"none ready", []store.SnapshotNode{cp(1, 101, false), cp(2, 102, false)}, 0, false},
		// Issue 43: a Ready worker beside a control plane that is not Ready.
		{"only a worker ready", []store.SnapshotNode{cp(1, 101, false), worker(2, 201)}, 0, false},
		{"a worker of a lower ordinal", []store.SnapshotNode{worker(1, 201), cp(2, 102, true)}, 102, true},
		{"no role", []store.SnapshotNode{{Ordinal: 1, VMID: 101, Ready: true}}, 0, false},
	} {
		got, ok := ChooseNode(c.nodes)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ChooseNode = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// cp is a control-plane node; worker a Ready worker.
func cp(ordinal int, vm int64, ready bool) store.SnapshotNode {
	return store.SnapshotNode{Ordinal: ordinal, VMID: vm, Role: store.RoleControlPlane, Ready: ready}
}

func worker(ordinal int, vm int64) store.SnapshotNode {
	return store.SnapshotNode{Ordinal: ordinal, VMID: vm, Role: store.RoleWorker, Ready: true}
}

// A cluster is due when its schedule is on, nothing is pending and its
// newest snapshot (of any state) is an interval old or it has none; the
// plan asks each due cluster with a Ready node once, of that node.
func TestDueAndPlan(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	ready := []store.SnapshotNode{cp(1, 101, true)}
	hourly := func(id int64, newest *time.Time, pending bool, nodes []store.SnapshotNode) store.SnapshotCluster {
		return store.SnapshotCluster{ID: id, Status: "active", IntervalSeconds: 3600, NewestAt: newest, Pending: pending, Nodes: nodes}
	}
	for _, c := range []struct {
		name string
		c    store.SnapshotCluster
		due  bool
	}{
		{"never snapshotted", hourly(1, nil, false, ready), true},
		{"exactly an interval ago", hourly(1, ago(time.Hour), false, ready), true},
		{"just under an interval", hourly(1, ago(time.Hour-time.Second), false, ready), false},
		{"pending", hourly(1, ago(2*time.Hour), true, ready), false},
		{"schedule off", store.SnapshotCluster{ID: 1, Status: "active", IntervalSeconds: 0, Nodes: ready}, false},
		{"not active", store.SnapshotCluster{ID: 1, Status: "deleting", IntervalSeconds: 3600, Nodes: ready}, false},
		{"short interval", store.SnapshotCluster{ID: 1, Status: "active", IntervalSeconds: 300, NewestAt: ago(5 * time.Minute), Nodes: ready}, true},
	} {
		if got := Due(c.c, now); got != c.due {
			t.Errorf("%s: Due = %v, want %v", c.name, got, c.due)
		}
	}
	plan := Plan([]store.SnapshotCluster{
		hourly(1, nil, false, ready),
		hourly(2, ago(10*time.Minute), false, ready),
		hourly(3, nil, false, []store.SnapshotNode{cp(1, 301, false), cp(2, 302, true)}),
		hourly(4, nil, false, []store.SnapshotNode{cp(1, 401, false)}),                 // due, no Ready node
		hourly(5, nil, false, []store.SnapshotNode{cp(1, 501, false), worker(2, 502)}), // due, only a worker Ready
	}, now)
	if len(plan) != 2 || plan[0].ClusterID != 1 || plan[0].NodeVMID != 101 || plan[1].ClusterID != 3 || plan[1].NodeVMID != 302 {
		t.Fatalf("plan = %+v", plan)
	}
	for _, p := range plan {
		if p.Trigger != store.SnapshotScheduled || p.RequestedBy != ScheduledBy || !p.RequestedAt.Equal(now) {
			t.Errorf("planned %+v", p)
		}
	}
}
