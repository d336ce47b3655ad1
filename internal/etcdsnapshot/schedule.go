package etcdsnapshot

import (
	"context"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// ChooseNode picks the node that takes a cluster's snapshot: the
// lowest-ordinal control-plane node that has a VM and is Ready (reported
// ready in its current bootstrap). Every control-plane node runs an etcd
// member with the whole keyspace, so any Ready one will do; the lowest
// ordinal makes the choice stable (the same node snapshots hour after hour
// while it stays Ready, so its timer's logs tell the story), and a node
// that is not Ready (bootstrapping, re-opened, failed) is skipped rather
// than asked for a snapshot it may not be able to take. A worker is never
// chosen, even Ready while no control-plane node is: it runs no etcd
// member, so what it would upload is no snapshot of the cluster's etcd
// (the store lists none; this holds it whoever builds the list). false:
// none is.
func ChooseNode(nodes []store.SnapshotNode) (vmID int64, ok bool) {
	best := -1
	for i, n := range nodes {
		if !takesSnapshots(n) {
			continue
		}
		if best < 0 || n.Ordinal < nodes[best].Ordinal {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	return nodes[best].VMID, true
}

// takesSnapshots: n is a control-plane node with a VM, Ready.
func takesSnapshots(n store.SnapshotNode) bool {
	return n.Role == store.RoleControlPlane && n.VMID != 0 && n.Ready
}

// Due reports whether the schedule asks c for a snapshot at now: its
// schedule is on, nothing of it is pending, and its newest snapshot (of
// any state: a failed one is retried an interval later, not every minute)
// is at least its interval old, or it has none.
func Due(c store.SnapshotCluster, now time.Time) bool {
	if c.Status != "active" || c.IntervalSeconds <= 0 || c.Pending {
		return false
	}
	return c.NewestAt == nil || now.Sub(*c.NewestAt) >= time.Duration(c.IntervalSeconds)*time.Second
}

// Schedule is the reconciler's part: each run fails the snapshots whose
// node did not report within ReportDeadline, then records a pending
// scheduled snapshot for every cluster Due, taken by the node ChooseNode
// picks (a cluster with no Ready node waits for a later run).
type Schedule struct {
	Store ScheduleStore
	Now   func() time.Time
}

// ScheduleReport is what one run did.
type ScheduleReport struct {
	Overdue   int64 `json:"overdue"`   // pending snapshots marked failed
	Scheduled int   `json:"scheduled"` // snapshots asked for
	NoNode    int   `json:"no_node"`   // clusters due with no Ready node
}

// OverdueFailure is the failure an overdue snapshot is marked with.
const OverdueFailure = "the node did not report the snapshot within 1h"

// Run is one run of the schedule.
func (s *Schedule) Run(ctx context.Context) (ScheduleReport, error) {
	var rep ScheduleReport
	at := now(s.Now)
	n, err := s.Store.FailOverdueEtcdSnapshots(ctx, at.Add(-ReportDeadline), at, OverdueFailure)
	if err != nil {
		return rep, err
	}
	rep.Overdue = n
	// The store reads only the clusters due; Plan judges them again (Due),
	// so the rule is the one written here.
	clusters, err := s.Store.DueSnapshotClusters(ctx, at)
	if err != nil {
		return rep, err
	}
	want := Plan(clusters, at)
	rep.NoNode = countDue(clusters, at) - len(want)
	if len(want) == 0 {
		return rep, nil
	}
	made, err := s.Store.RecordEtcdSnapshots(ctx, want)
	rep.Scheduled = len(made)
	return rep, err
}

// Plan is the snapshots the schedule asks for at now: one per cluster
// Due that has a Ready node.
func Plan(clusters []store.SnapshotCluster, now time.Time) []store.EtcdSnapshot {
	var out []store.EtcdSnapshot
	for _, c := range clusters {
		if !Due(c, now) {
			continue
		}
		vm, ok := ChooseNode(c.Nodes)
		if !ok {
			continue
		}
		out = append(out, store.EtcdSnapshot{ClusterID: c.ID, Trigger: store.SnapshotScheduled, RequestedBy: ScheduledBy,
			NodeVMID: vm, RequestedAt: now})
	}
	return out
}

func countDue(clusters []store.SnapshotCluster, now time.Time) int {
	n := 0
	for _, c := range clusters {
		if Due(c, now) {
			n++
		}
	}
	return n
}
