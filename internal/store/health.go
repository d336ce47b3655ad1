package store

import (
	"context"
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
// its checks as a JSON object, whether any failed, and when it came.
type HealthReport struct {
	VMID, OrgID int64
	Role        string
	ChecksJSON  string
	Failing     bool
	At          time.Time
}

// RecordHealth records a node's report in one statement: a failing report
// keeps the first failing one's time, a passing one clears it and the
// node's noted refusal. Answers the cluster's status (the report is
// recorded only for an active cluster); ErrNotFound: VMID is no node of
// Role of org's clusters.
func (s *Store) RecordHealth(ctx context.Context, r HealthReport) (HealthRecorded, error) {
	var out HealthRecorded
	err := s.pool.QueryRow(ctx, `WITH node AS (
			SELECT n.id, k.status, `+rotationAsks+` AS renew FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
			WHERE n.vm_id = $1 AND k.org_id = $2 AND n.role = $3
		), recorded AS (
			UPDATE kube_nodes n SET health_reported_at = $4, health_checks = $5::jsonb,
				health_failing_since = CASE WHEN $6 THEN coalesce(n.health_failing_since, $4) END,
				remediation_refused = CASE WHEN $6 THEN n.remediation_refused ELSE '' END
			FROM node WHERE n.id = node.id AND node.status = 'active' RETURNING 1
		)
		SELECT status, renew FROM node`, r.VMID, r.OrgID, r.Role, r.At, r.ChecksJSON, r.Failing).Scan(&out.Status, &out.RenewDue)
	if err != nil {
		return out, fmt.Errorf("recording the health of vm %d: %w", r.VMID, notFound(err))
	}
	return out, nil
}

// HealthRecorded is what recording a report found: the cluster's status,
// and whether a CA rotation asks the node for a phase it has not applied
// (its health report's answer tells it to renew now).
type HealthRecorded struct {
	Status   string
	RenewDue bool
}

// rotationAsks is whether the live rotation of node n's cluster stands at
// a phase and epoch n has not applied (Rotation.Moving, AppliedBy). The
// control plane is asked one node at a time, by ordinal: a node only once
// every control-plane node before it applied the phase and reports no
// failing check, so no two of them restart etcd and their API servers at
// once. Workers restart their kubelet only, and are asked together.
var rotationAsks = `EXISTS (SELECT 1 FROM ca_rotations cr JOIN operations co ON co.id = cr.operation_id
	WHERE cr.kube_cluster_id = n.kube_cluster_id AND co.ended_at IS NULL AND cr.phase NOT IN ('done', 'aborted')
	AND NOT ` + appliedBy("n") + `
	AND (n.role <> 'control-plane' OR NOT EXISTS (SELECT 1 FROM kube_nodes p
		WHERE p.kube_cluster_id = n.kube_cluster_id AND p.role = 'control-plane' AND p.ordinal < n.ordinal
		AND p.vm_id IS NOT NULL AND NOT p.retiring AND (NOT ` + appliedBy("p") + ` OR p.health_failing_since IS NOT NULL))))`

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
