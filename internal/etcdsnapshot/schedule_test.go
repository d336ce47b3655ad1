package etcdsnapshot

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// The node that takes a snapshot is the lowest-ordinal Ready node with a
// VM, whatever order the nodes come in; none Ready, none chosen.
func TestChooseNode(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []store.SnapshotNode
		want  int64
		ok    bool
	}{
		{"none", nil, 0, false},
		{"all ready", []store.SnapshotNode{{Ordinal: 1, VMID: 101, Ready: true}, {Ordinal: 2, VMID: 102, Ready: true}, {Ordinal: 3, VMID: 103, Ready: true}}, 101, true},
		{"first not ready", []store.SnapshotNode{{Ordinal: 1, VMID: 101, Ready: false}, {Ordinal: 2, VMID: 102, Ready: true}, {Ordinal: 3, VMID: 103, Ready: true}}, 102, true},
		{"out of order", []store.SnapshotNode{{Ordinal: 3, VMID: 103, Ready: true}, {Ordinal: 2, VMID: 102, Ready: true}, {Ordinal: 1, VMID: 101, Ready: false}}, 102, true},
		{"ready without a VM", []store.SnapshotNode{{Ordinal: 1, VMID: 0, Ready: true}, {Ordinal: 2, VMID: 102, Ready: true}}, 102, true},
		{"none ready", []store.SnapshotNode{{Ordinal: 1, VMID: 101, Ready: false}, {Ordinal: 2, VMID: 102, Ready: false}}, 0, false},
	} {
		got, ok := ChooseNode(c.nodes)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ChooseNode = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A cluster is due when its schedule is on, nothing is pending and its
// newest snapshot (of any state) is an interval old or it has none; the
// plan asks each due cluster with a Ready node once, of that node.
func TestDueAndPlan(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	ready := []store.SnapshotNode{{Ordinal: 1, VMID: 101, Ready: true}}
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
		hourly(3, nil, false, []store.SnapshotNode{{Ordinal: 1, VMID: 301, Ready: false}, {Ordinal: 2, VMID: 302, Ready: true}}),
		hourly(4, nil, false, []store.SnapshotNode{{Ordinal: 1, VMID: 401, Ready: false}}), // due, no Ready node
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
