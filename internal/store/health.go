package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// NodeHealth is what a node's last health report said (migration 028):
// when it came, its checks as JSON (name -> {"ok", "message"}), since
// when its reports name a failing check (nil while all pass), and why the
// node's last remediation was refused. All nil: the node never reported.
type NodeHealth struct {
	ReportedAt         *time.Time
	Checks             []byte
	FailingSince       *time.Time
	RemediationRefused string
}

// HealthReport is one node's report: the VM (of org, its node of Role),
// its checks as a JSON object, whether any failed, when it came, and the
// deprecated APIs its API server says were requested (nil: the report
// has none to say, and the node's record stands).
type HealthReport struct {
	VMID, OrgID    int64
	Role           string
	ChecksJSON     string
	Failing        bool
	At             time.Time
	DeprecatedAPIs []DeprecatedAPI
}

// MaxDeprecatedAPIsKept bounds a node's record of deprecated APIs: the
// ones seen last are kept. As many as one report may hold
// (apitypes.MaxDeprecatedAPIs), so a report is never cut.
const MaxDeprecatedAPIsKept = 64

// RecordHealth records a node's report in one statement: a failing report
// keeps the first failing one's time, a passing one clears it and the
// node's noted refusal. Its deprecated APIs, when it has them, are merged
// into the node's record (mergedDeprecatedAPIs). Answers the cluster's
// status (the report is recorded only for an active cluster), whether a
// rotation asks a renewal and the drain bound of a node a live upgrade
// retires; ErrNotFound: VMID is no node of Role of org's clusters.
func (s *Store) RecordHealth(ctx context.Context, r HealthReport) (HealthRecorded, error) {
	var out HealthRecorded
	err := s.pool.QueryRow(ctx, `WITH node AS (
			SELECT n.id, k.status, `+rotationAsks("$4")+` AS renew, `+upgradeDrain+` AS drain, `+snapshotAsked+` AS snapshot
			FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
			WHERE n.vm_id = $1 AND k.org_id = $2 AND n.role = $3
		), recorded AS (
			UPDATE kube_nodes n SET health_reported_at = $4, health_checks = $5::jsonb,
				health_failing_since = CASE WHEN $6 THEN coalesce(n.health_failing_since, $4) END,
				remediation_refused = CASE WHEN $6 THEN n.remediation_refused ELSE '' END,
				deprecated_apis = CASE WHEN $7::jsonb IS NULL THEN n.deprecated_apis ELSE `+mergedDeprecatedAPIs+` END,
				deprecated_apis_reported_at = CASE WHEN $7::jsonb IS NULL THEN n.deprecated_apis_reported_at ELSE $4 END
			FROM node WHERE n.id = node.id AND node.status = 'active' RETURNING 1
		)
		SELECT status, renew, drain, snapshot FROM node`, r.VMID, r.OrgID, r.Role, r.At, r.ChecksJSON, r.Failing, deprecatedJSON(r),
		DeprecatedAPIsWithin.Seconds(), MaxDeprecatedAPIsKept).Scan(&out.Status, &out.RenewDue, &out.DrainSeconds, &out.SnapshotDue)
	if err != nil {
		return out, fmt.Errorf("recording the health of vm %d: %w", r.VMID, notFound(err))
	}
	return out, nil
}

// mergedDeprecatedAPIs is node n's record of deprecated APIs with report
// $7's merged in: each reported API seen at $4, each recorded one the
// report does not name kept with its own time while it is within $8
// seconds of $4 (an API server's counter starts again when it restarts,
// so an API no longer reported ages out), the newest $9 of them. An API
// is the same one when every key but last_seen is.
const mergedDeprecatedAPIs = `(SELECT coalesce(jsonb_agg(e ORDER BY (e->>'last_seen')::timestamptz DESC, e->>'group', e->>'version', e->>'resource', e->>'subresource'), '[]')
	FROM (SELECT e FROM (
		SELECT (r - 'last_seen') || jsonb_build_object('last_seen', $4::timestamptz) AS e FROM jsonb_array_elements($7::jsonb) r
		UNION ALL
		SELECT o FROM jsonb_array_elements(n.deprecated_apis) o
		WHERE (o->>'last_seen')::timestamptz > $4::timestamptz - make_interval(secs => $8)
		AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements($7::jsonb) r WHERE r - 'last_seen' = o - 'last_seen')
	) u ORDER BY (e->>'last_seen')::timestamptz DESC LIMIT $9) kept)`

// deprecatedJSON is r's deprecated APIs as a JSON array (their times are
// the statement's: the report's); nil when r has none to say.
func deprecatedJSON(r HealthReport) *string {
	if r.DeprecatedAPIs == nil {
		return nil
	}
	b, _ := json.Marshal(r.DeprecatedAPIs) // plain strings and times cannot fail to marshal
	s := string(b)
	return &s
}

// HealthRecorded is what recording a report found: the cluster's status,
// whether a CA rotation asks the node for a phase it has not applied (its
// health report's answer tells it to renew now), the drain bound the
// live upgrade sets for this node (0: none; the bundle's own applies)
// and whether a pending etcd snapshot names this node (it takes it now,
// not at its snapshot timer's next ask).
type HealthRecorded struct {
	Status       string
	RenewDue     bool
	DrainSeconds int
	SnapshotDue  bool
}

// snapshotAsked is whether the cluster's pending etcd snapshot (one at
// most: etcd_snapshots' partial unique index, which this reads by) was
// handed to node n. An upgrade waits on the one it asks before its first
// node moves, and an operator's on-demand one should not wait out the
// node's snapshot timer (minutes) either.
const snapshotAsked = `EXISTS (SELECT 1 FROM etcd_snapshots s
	WHERE s.kube_cluster_id = n.kube_cluster_id AND s.state = 'pending' AND s.node_vm_id = n.vm_id)`

// upgradeDrain is the drain_timeout_seconds of the running upgrade of node
// n's cluster when that upgrade retires n, else 0. An upgrade retires, in
// its pass, every node not at the pass's version: each control-plane node
// by a replacement, each worker by its pool's surge (upgrade.split). So a
// node is told its upgrade's bound from the upgrade's start, before its
// retirement (the snapshot comes first, and a replaced control-plane
// node keeps reporting until its VM is deleted), and a new node, at the
// pass's version, is not. It must be told before: its drain runs as its
// VM powers off, after the VM's deletion, when its IMDS sessions have
// ended with it and its row is gone (docs/UPGRADES.md). A paused upgrade
// retires nothing; an abort is not upgrading.
const upgradeDrain = `coalesce((SELECT u.drain_timeout_seconds FROM cluster_upgrades u
	WHERE u.kube_cluster_id = n.kube_cluster_id AND u.state = '` + UpgradeUpgrading + `'
	AND n.kubernetes_version <> u.pass_version), 0)`

// rotationAsks is whether, at time at, the live rotation of node n's
// cluster stands at a phase and epoch n has not applied (Rotation.Moving,
// AppliedBy). Workers restart their kubelet only, and are asked together.
// The control plane is asked one node at a time, so no two of them
// restart etcd and their API servers at once: a node only once every
// control-plane node ordered before it applied the phase and reports no
// failing check. The order is by ordinal with the endpoint (the node the
// control-plane name points at, endpointOf) last: every client of the
// name is pointed at it, so it restarts only after the rotation moved the
// name to a node that applied the phase (carotation's applied step), and
// only once the TTL of the record written then has passed since the move,
// when no client's cache still holds its address. The endpoint itself is
// asked only when it cannot be steered: it is the only live control-plane
// node, or the DNS API does not hold the name (dns_configured false: a
// refused move, or records the operator keeps by hand).
func rotationAsks(at string) string {
	return `EXISTS (SELECT 1 FROM ca_rotations cr JOIN operations co ON co.id = cr.operation_id JOIN kube_clusters e ON e.id = cr.kube_cluster_id
	WHERE cr.kube_cluster_id = n.kube_cluster_id AND co.ended_at IS NULL AND cr.phase NOT IN ('done', 'aborted')
	AND NOT ` + appliedBy("n") + `
	AND (n.role <> 'control-plane' OR (NOT EXISTS (SELECT 1 FROM kube_nodes p
		WHERE ` + liveControlPlane("p") + ` AND p.id <> n.id
		AND (n.vm_id = ` + endpointOf("e") + ` OR (p.vm_id IS DISTINCT FROM ` + endpointOf("e") + ` AND p.ordinal < n.ordinal))
		AND (NOT ` + appliedBy("p") + ` OR p.health_failing_since IS NOT NULL))
	AND (n.vm_id IS DISTINCT FROM ` + endpointOf("e") + ` OR NOT e.dns_configured
		OR NOT EXISTS (SELECT 1 FROM kube_nodes p WHERE ` + liveControlPlane("p") + ` AND p.id <> n.id))
	AND (e.endpoint_moved_at IS NULL OR ` + at + ` >= e.endpoint_moved_at + make_interval(secs => coalesce(e.endpoint_ttl_seconds, 0))))))`
}

// liveControlPlane is whether node (an alias) is a control-plane node of
// n's cluster with a VM, not retiring.
func liveControlPlane(node string) string {
	return node + `.kube_cluster_id = n.kube_cluster_id AND ` + node + `.role = 'control-plane' AND ` + node + `.vm_id IS NOT NULL AND NOT ` + node + `.retiring`
}

// endpointOf is the VM the control-plane name of cluster k (an alias)
// points at: the one recorded, else (never recorded) its lowest-ordinal
// live control-plane node with an address, as controlplane.PointDNS chose
// before it recorded.
func endpointOf(k string) string {
	return `coalesce(` + k + `.endpoint_vm_id, (SELECT l.vm_id FROM kube_nodes l WHERE l.kube_cluster_id = ` + k + `.id
		AND l.role = 'control-plane' AND l.vm_id IS NOT NULL AND NOT l.retiring AND l.ipv4 <> '' ORDER BY l.ordinal LIMIT 1))`
}

// appliedBy is whether node (an alias) applied rotation cr's phase and epoch.
func appliedBy(node string) string {
	return `(` + node + `.ca_rotation_id IS NOT DISTINCT FROM cr.operation_id AND ` + node + `.ca_phase_applied IS NOT DISTINCT FROM cr.phase
		AND ` + node + `.ca_phase_applied_at IS NOT DISTINCT FROM cr.phase_began_at)`
}

// ClusterRef names a cluster and its org.
type ClusterRef struct{ OrgID, ID int64 }

// RemediationCandidates are the active clusters with remediation on that
// have a ready node, not retiring, whose reports stopped before silentSince
// or name a failing check: the ones the remediation sweep judges. The
// judgment itself is internal/nodehealth's.
func (s *Store) RemediationCandidates(ctx context.Context, silentSince time.Time) ([]ClusterRef, error) {
	rows, _ := s.pool.Query(ctx, `SELECT k.org_id, k.id FROM kube_clusters k
		WHERE k.status = 'active' AND k.unhealthy_after_seconds > 0 AND EXISTS (
			SELECT 1 FROM kube_nodes n WHERE n.kube_cluster_id = k.id AND n.health_reported_at IS NOT NULL
			AND NOT n.retiring AND n.ready_at IS NOT NULL
			AND (n.health_reported_at < $1 OR n.health_failing_since IS NOT NULL))
		ORDER BY k.id`, silentSince)
	refs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClusterRef, error) {
		var c ClusterRef
		return c, r.Scan(&c.OrgID, &c.ID)
	})
	if err != nil {
		return nil, fmt.Errorf("listing the clusters to judge for remediation: %w", err)
	}
	return refs, nil
}

// ClusterOperations describes every live operation of the cluster (the
// one "no live operation on this cluster" check, liveOpsOf): a pool's as
// "node pool web is scaling", a replacement's by the node it replaces,
// any other by its kind; none: nil.
func (s *Store) ClusterOperations(ctx context.Context, clusterID int64) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT coalesce(CASE o.kind
			WHEN '`+KindNodePool+`' THEN (SELECT 'node pool ' || p.name || ' is ' || p.state FROM node_pools p WHERE p.id = o.target_id)
			WHEN '`+KindNodeReplacement+`' THEN (SELECT 'node ' || r.old_node_name || ' is being replaced (replacement ' || r.id || ')'
				FROM node_replacements r WHERE r.id = o.target_id)
			END, 'the cluster''s ' || o.kind) `+liveOpsOf("$1")+` ORDER BY o.id`, clusterID)
	running, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading the operations of cluster %d: %w", clusterID, err)
	}
	return running, nil
}

// NoteRemediationRefused notes why the node's remediation was refused;
// false when that was already the node's note (nothing new to record).
func (s *Store) NoteRemediationRefused(ctx context.Context, nodeID int64, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE kube_nodes SET remediation_refused = $2 WHERE id = $1 AND remediation_refused <> $2`,
		nodeID, reason)
	if err != nil {
		return false, fmt.Errorf("noting the refused remediation of node %d: %w", nodeID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// WorkerReplacement is the start of a worker's replacement: Old (a worker
// of the org's pool, not retiring) is retired and a new worker, named by
// Name, intended in its place, under Lease.
type WorkerReplacement struct {
	OrgID int64
	Pool  Pool
	Old   Node
	Lease Lease
	Now   time.Time
	Name  func(ordinal int) string
}

// BeginWorkerReplacement commits a worker's replacement as a pool
// operation (scaling, its count unchanged) before any remote call, in one
// transaction that locks the cluster (active): the pool's node-pool
// operation begun under Lease (upsertPool, as a scale's), Old
// retiring, and one new worker's row whose ordinal (so name) follows
// every one the cluster handed out. A pool that is busy or not active:
// ErrLeaseLost; an old worker that is gone or retiring: ErrNotFound.
func (s *Store) BeginWorkerReplacement(ctx context.Context, w WorkerReplacement) (Pool, error) {
	change := PoolChange{OrgID: w.OrgID, Pool: w.Pool, State: PoolScaling, From: []string{PoolActive}, Lease: w.Lease, Now: w.Now, Name: w.Name}
	out, err := s.beginPool(ctx, change, func(tx pgx.Tx, p Pool) error { return retireWorker(ctx, tx, p.ID, w.Old.ID) })
	if err != nil {
		return out, fmt.Errorf("beginning the replacement of worker %s: %w", w.Old.Name, err)
	}
	return out, nil
}

func retireWorker(ctx context.Context, tx pgx.Tx, poolID, nodeID int64) error {
	tag, err := tx.Exec(ctx, `UPDATE kube_nodes SET retiring = true WHERE id = $1 AND node_pool_id = $2 AND NOT retiring`,
		nodeID, poolID)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return err
}
