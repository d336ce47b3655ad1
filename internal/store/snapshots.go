package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The states and triggers of an etcd snapshot (migration 016's CHECKs);
// the first state, pending, only SQL writes.
const (
	SnapshotUploaded = "uploaded"
	SnapshotFailed   = "failed"

	SnapshotScheduled = "scheduled"
	SnapshotOnDemand  = "on_demand"
)

// EtcdSnapshot is one etcd_snapshots row.
type EtcdSnapshot struct {
	ID          int64
	ClusterID   int64
	Trigger     string // scheduled, on_demand
	RequestedBy string // auth.Principal.Who, or the schedule
	RequestID   string
	NodeVMID    int64 // the node that takes it
	ObjectKey   string
	State       string
	SizeBytes   *int64
	SHA256      *string
	Failure     *string
	RequestedAt time.Time
	FinishedAt  *time.Time
}

// SnapshotNode is one control-plane node as the choice of who snapshots
// sees it (SnapshotCluster lists no worker: a worker runs no etcd member).
type SnapshotNode struct {
	Ordinal int
	VMID    int64  // 0: no VM yet
	Role    string // RoleControlPlane: the one role the query lists
	Ready   bool   // reported ready in its current bootstrap
}

// etcdMemberSQL holds a kube_nodes row n to a node that runs a member of
// its cluster's etcd: a control-plane node, not retiring. A worker holds
// no etcd data and no etcd client identity, so a snapshot it would take,
// upload or report is none of the cluster's (issue 43).
const etcdMemberSQL = `n.role = '` + RoleControlPlane + `' AND NOT n.retiring`

// snapshotTakerSQL holds n to a node that may take, upload and report a
// snapshot: an etcd member that reported ready in its current bootstrap.
const snapshotTakerSQL = etcdMemberSQL + ` AND n.ready_at IS NOT NULL AND n.phase = 'ready'`

// SnapshotCluster is a cluster as a snapshot's recording needs it: its
// status, schedule, newest snapshot and nodes.
type SnapshotCluster struct {
	ID              int64
	OrgID           int64
	Status          string
	IntervalSeconds int
	NewestAt        *time.Time // the newest snapshot's requested_at, of any state
	Pending         bool
	Nodes           []SnapshotNode
}

// snapshotClusterJSON is one cluster as a JSON object keyed by
// SnapshotCluster's field names (so the row needs no tags): one value per
// cluster keeps the scan small (see AuditEvents).
const snapshotClusterJSON = `json_build_object('ID', k.id, 'OrgID', k.org_id, 'Status', k.status,
	'IntervalSeconds', k.etcd_snapshot_interval_seconds,
	'NewestAt', (SELECT max(requested_at) FROM etcd_snapshots s WHERE s.kube_cluster_id = k.id),
	'Pending', EXISTS (SELECT 1 FROM etcd_snapshots s WHERE s.kube_cluster_id = k.id AND s.state = 'pending'),
	'Nodes', COALESCE((SELECT json_agg(json_build_object('Ordinal', n.ordinal, 'VMID', COALESCE(n.vm_id, 0),
		'Role', n.role, 'Ready', n.ready_at IS NOT NULL AND n.phase = 'ready') ORDER BY n.ordinal)
		FROM kube_nodes n WHERE n.kube_cluster_id = k.id AND ` + etcdMemberSQL + `), '[]'))`

// SnapshotCluster reads one of org's clusters for an on-demand snapshot.
// ErrNotFound: no such cluster of org.
func (s *Store) SnapshotCluster(ctx context.Context, orgID, clusterID int64) (SnapshotCluster, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT `+snapshotClusterJSON+` FROM kube_clusters k WHERE k.org_id = $1 AND k.id = $2`,
		orgID, clusterID).Scan(&raw)
	var c SnapshotCluster
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil {
		return c, fmt.Errorf("reading cluster %d for a snapshot: %w", clusterID, notFound(err))
	}
	return c, nil
}

// DueSnapshotClusters reads the clusters the schedule asks a snapshot of
// at now (etcdsnapshot.Due): active, schedule on, nothing pending, no
// snapshot asked for within its interval. One round trip (the
// reconciler's, every minute), whose cost grows with the clusters due, not
// the fleet: it walks the index of the scheduled clusters whose
// next_snapshot_at has come (migration 027; RecordEtcdSnapshots moves it),
// judges each of those from its pending and newest snapshot as before, so
// a next_snapshot_at that is early costs a probe and never a snapshot, and
// reads only the due clusters' rows and nodes.
func (s *Store) DueSnapshotClusters(ctx context.Context, now time.Time) ([]SnapshotCluster, error) {
	var raw []byte
	// due is materialized so it is judged from the schedule's index alone
	// (id and interval; no heap row), and each cluster's newest snapshot is
	// one backward probe of etcd_snapshots_newest; only the due clusters'
	// rows are then read, by primary key (= ANY of an array: a join would
	// be planned on the CTE's guess of a third of the fleet), for their JSON.
	err := s.pool.QueryRow(ctx, `WITH due AS MATERIALIZED (
			SELECT k.id FROM kube_clusters k
			WHERE k.status = 'active' AND k.etcd_snapshot_interval_seconds > 0 AND k.next_snapshot_at <= $1
			  AND NOT EXISTS (SELECT 1 FROM etcd_snapshots s WHERE s.kube_cluster_id = k.id AND s.state = 'pending')
			  AND coalesce((SELECT max(s.requested_at) FROM etcd_snapshots s WHERE s.kube_cluster_id = k.id), '-infinity')
			      <= $1::timestamptz - k.etcd_snapshot_interval_seconds * interval '1 second'
		)
		SELECT COALESCE(json_agg(`+snapshotClusterJSON+` ORDER BY k.id), '[]')
		FROM kube_clusters k WHERE k.id = ANY (ARRAY (SELECT id FROM due))`, now).Scan(&raw)
	var out []SnapshotCluster
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the clusters due a snapshot: %w", err)
	}
	return out, nil
}

// RecordEtcdSnapshots records pending snapshots (each's cluster, trigger,
// requested_by, request_id, node and time), in one statement, each only
// while its cluster is active and has no pending snapshot (the one-pending
// index; the cluster's row is locked for the insert, so a deletion that
// began meanwhile is seen, not raced), and moves each one's
// next_snapshot_at to a snapshot's interval after it (the row is locked
// for update, not share: two recorders of one cluster would each hold a
// share lock and wait for the other's to update). It returns the rows it
// wrote.
func (s *Store) RecordEtcdSnapshots(ctx context.Context, snaps []EtcdSnapshot) ([]EtcdSnapshot, error) {
	n := len(snaps)
	clusters, vms := make([]int64, n), make([]int64, n)
	triggers, by, reqIDs := make([]string, n), make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, sn := range snaps {
		clusters[i], vms[i], triggers[i], by[i], reqIDs[i], at[i] = sn.ClusterID, sn.NodeVMID, sn.Trigger, sn.RequestedBy, sn.RequestID, sn.RequestedAt
	}
	var raw []byte
	err := s.pool.QueryRow(ctx, `
		WITH want AS (
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[])
				AS u (cluster_id, trigger, requested_by, request_id, vm_id, requested_at)
		), live AS (
			SELECT k.id FROM kube_clusters k JOIN want w ON w.cluster_id = k.id WHERE k.status = 'active' FOR NO KEY UPDATE OF k
		), made AS (
			INSERT INTO etcd_snapshots (kube_cluster_id, trigger, requested_by, request_id, node_vm_id, requested_at)
			SELECT w.cluster_id, w.trigger, w.requested_by, w.request_id, w.vm_id, w.requested_at
			FROM want w JOIN live ON live.id = w.cluster_id
			ON CONFLICT (kube_cluster_id) WHERE state = 'pending' DO NOTHING
			RETURNING *
		), scheduled AS (
			UPDATE kube_clusters k
			SET next_snapshot_at = greatest(k.next_snapshot_at, m.requested_at + k.etcd_snapshot_interval_seconds * interval '1 second')
			FROM made m WHERE k.id = m.kube_cluster_id
		)
		SELECT COALESCE(json_agg(made ORDER BY id), '[]') FROM made`,
		clusters, triggers, by, reqIDs, vms, at).Scan(&raw)
	var out []snapshotRow
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("recording %d etcd snapshots: %w", n, err)
	}
	return rowsToSnapshots(out), nil
}

// MaxEtcdSnapshotsShown bounds EtcdSnapshots (the newest).
const MaxEtcdSnapshotsShown = 100

// EtcdSnapshots lists one of org's clusters' snapshots (of any status),
// newest first, in one round trip. ErrNotFound: no such cluster of org.
func (s *Store) EtcdSnapshots(ctx context.Context, orgID, clusterID int64) ([]EtcdSnapshot, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE((
			SELECT json_agg(e ORDER BY e.requested_at DESC, e.id DESC)
			FROM (SELECT * FROM etcd_snapshots WHERE kube_cluster_id = k.id ORDER BY requested_at DESC, id DESC LIMIT $3) e
		), '[]')
		FROM kube_clusters k WHERE k.org_id = $1 AND k.id = $2`, orgID, clusterID, MaxEtcdSnapshotsShown).Scan(&raw)
	var rows []snapshotRow
	if err == nil {
		err = json.Unmarshal(raw, &rows)
	}
	if err != nil {
		return nil, fmt.Errorf("listing etcd snapshots of cluster %d: %w", clusterID, notFound(err))
	}
	return rowsToSnapshots(rows), nil
}

// EtcdSnapshot is snapshot id of org's cluster clusterID, in any state:
// the fields a restore reads (id, key, state, size, digest). ErrNotFound:
// no such snapshot of that cluster, the cluster is not org's (a restore
// from another org's snapshot learns nothing), or no control-plane node of
// that cluster took it (a worker's upload is no etcd of the cluster's; a
// node's row outlives its retirement, so a replaced node's still counts).
func (s *Store) EtcdSnapshot(ctx context.Context, orgID, clusterID, id int64) (EtcdSnapshot, error) {
	snap := EtcdSnapshot{ID: id, ClusterID: clusterID}
	err := s.pool.QueryRow(ctx, `SELECT e.object_key, e.state, e.size_bytes, e.sha256
		FROM etcd_snapshots e JOIN kube_clusters k ON k.id = e.kube_cluster_id
		JOIN kube_nodes n ON n.kube_cluster_id = k.id AND n.vm_id = e.node_vm_id AND n.role = $4
		WHERE k.org_id = $1 AND k.id = $2 AND e.id = $3`, orgID, clusterID, id, RoleControlPlane).Scan(&snap.ObjectKey, &snap.State, &snap.SizeBytes, &snap.SHA256)
	if err != nil {
		return snap, fmt.Errorf("reading snapshot %d of cluster %d: %w", id, clusterID, notFound(err))
	}
	return snap, nil
}

// PendingEtcdSnapshot is the pending snapshot vm of org is to take: id's,
// or (id 0) its cluster's. Only while the cluster is org's and active and
// vm is still one of its Ready control-plane nodes (snapshotTakerSQL): a
// worker, or a node re-opened since it was chosen, gets no upload URL and
// is not believed. ErrNotFound: none.
func (s *Store) PendingEtcdSnapshot(ctx context.Context, vmID, orgID, id int64) (EtcdSnapshot, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `
		SELECT row_to_json(e) FROM etcd_snapshots e
		JOIN kube_clusters k ON k.id = e.kube_cluster_id
		JOIN kube_nodes n ON n.kube_cluster_id = k.id AND n.vm_id = e.node_vm_id AND `+snapshotTakerSQL+`
		WHERE e.node_vm_id = $1 AND k.org_id = $2 AND k.status = 'active' AND e.state = 'pending'
		  AND ($3 = 0 OR e.id = $3)
		ORDER BY e.id LIMIT 1`, vmID, orgID, id).Scan(&raw)
	var row snapshotRow
	if err == nil {
		err = json.Unmarshal(raw, &row)
	}
	if err != nil {
		return EtcdSnapshot{}, fmt.Errorf("reading vm %d's pending snapshot: %w", vmID, notFound(err))
	}
	return row.snapshot(), nil
}

// SnapshotOutcome finishes one pending snapshot: uploaded with its size
// and digest, or failed with why.
type SnapshotOutcome struct {
	ID, VMID, OrgID int64
	State           string // SnapshotUploaded or SnapshotFailed
	SizeBytes       int64
	SHA256          string
	Failure         string
	At              time.Time
}

// FinishEtcdSnapshot writes o, only while the snapshot is still pending and
// vm's (of org), and vm still a Ready control-plane node of its cluster
// (as PendingEtcdSnapshot found it, in the same statement as the write);
// ErrNotFound otherwise. It returns the row as written.
func (s *Store) FinishEtcdSnapshot(ctx context.Context, o SnapshotOutcome) (EtcdSnapshot, error) {
	var size *int64
	var sum, failure *string
	if o.State == SnapshotUploaded {
		size, sum = &o.SizeBytes, &o.SHA256
	} else {
		failure = &o.Failure
	}
	var raw []byte
	err := s.pool.QueryRow(ctx, `
		UPDATE etcd_snapshots e SET state = $4, size_bytes = $5, sha256 = $6, failure = $7, finished_at = $8
		FROM kube_clusters k
		WHERE e.id = $1 AND e.node_vm_id = $2 AND k.id = e.kube_cluster_id AND k.org_id = $3 AND e.state = 'pending'
		  AND EXISTS (SELECT 1 FROM kube_nodes n WHERE n.kube_cluster_id = k.id AND n.vm_id = e.node_vm_id AND `+snapshotTakerSQL+`)
		RETURNING row_to_json(e)`, o.ID, o.VMID, o.OrgID, o.State, size, sum, failure, o.At).Scan(&raw)
	var row snapshotRow
	if err == nil {
		err = json.Unmarshal(raw, &row)
	}
	if err != nil {
		return EtcdSnapshot{}, fmt.Errorf("finishing etcd snapshot %d: %w", o.ID, notFound(err))
	}
	return row.snapshot(), nil
}

// FailOverdueEtcdSnapshots marks failed every snapshot still pending that
// was asked for before cutoff: its node never reported. It returns how many.
// It compares UTC wall times, as its index (migration 027) holds them, so
// it reads only the overdue ones.
func (s *Store) FailOverdueEtcdSnapshots(ctx context.Context, cutoff, at time.Time, why string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE etcd_snapshots SET state = 'failed', failure = $3, finished_at = $2
		WHERE state = 'pending' AND (requested_at AT TIME ZONE 'UTC') < ($1::timestamptz AT TIME ZONE 'UTC')`, cutoff, at, why)
	if err != nil {
		return 0, fmt.Errorf("failing overdue etcd snapshots: %w", err)
	}
	return tag.RowsAffected(), nil
}

// snapshotRow is a row as row_to_json spells it.
type snapshotRow struct {
	ID            int64      `json:"id"`
	KubeClusterID int64      `json:"kube_cluster_id"`
	Trigger       string     `json:"trigger"`
	RequestedBy   string     `json:"requested_by"`
	RequestID     string     `json:"request_id"`
	NodeVMID      int64      `json:"node_vm_id"`
	ObjectKey     string     `json:"object_key"`
	State         string     `json:"state"`
	SizeBytes     *int64     `json:"size_bytes"`
	SHA256        *string    `json:"sha256"`
	Failure       *string    `json:"failure"`
	RequestedAt   time.Time  `json:"requested_at"`
	FinishedAt    *time.Time `json:"finished_at"`
}

func (r snapshotRow) snapshot() EtcdSnapshot {
	return EtcdSnapshot{ID: r.ID, ClusterID: r.KubeClusterID, Trigger: r.Trigger, RequestedBy: r.RequestedBy,
		RequestID: r.RequestID, NodeVMID: r.NodeVMID, ObjectKey: r.ObjectKey, State: r.State, SizeBytes: r.SizeBytes,
		SHA256: r.SHA256, Failure: r.Failure, RequestedAt: r.RequestedAt, FinishedAt: r.FinishedAt}
}

func rowsToSnapshots(rows []snapshotRow) []EtcdSnapshot {
	out := make([]EtcdSnapshot, len(rows))
	for i, r := range rows {
		out[i] = r.snapshot()
	}
	return out
}

// RestoreSource is the snapshot a restored cluster's etcd starts from, as
// copied onto the cluster at founding (migration 019).
type RestoreSource struct {
	ClusterID int64
	ObjectKey string
	SizeBytes int64
	SHA256    string
}

// RestoreSourceOf is the snapshot vm's cluster (one of org's) was restored
// from, for a control-plane node only (a worker never holds etcd's data);
// ErrNotFound for a cluster founded empty or a worker.
func (s *Store) RestoreSourceOf(ctx context.Context, vmID, orgID int64) (RestoreSource, error) {
	var r RestoreSource
	err := s.pool.QueryRow(ctx, `
		SELECT k.id, k.restore_object_key, k.restore_size_bytes, k.restore_sha256
		FROM kube_clusters k JOIN kube_nodes n ON n.kube_cluster_id = k.id
		WHERE n.vm_id = $1 AND k.org_id = $2 AND n.role = $3 AND k.restore_object_key IS NOT NULL
		LIMIT 1`, vmID, orgID, RoleControlPlane).Scan(&r.ClusterID, &r.ObjectKey, &r.SizeBytes, &r.SHA256)
	if err != nil {
		return RestoreSource{}, fmt.Errorf("reading vm %d's restore source: %w", vmID, notFound(err))
	}
	return r, nil
}
