package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PhaseChange asks to move one VM's node of Role to phase To, only if the node is in
// one of the phases From (or FromOnceReady, for a node that has reported
// ready in its current bootstrap), the cluster is org's and it is active.
// InitialOnly refuses the move unless the node is its cluster's initial one
// (the lowest ordinal); MarksReady records the node's first ready.
type PhaseChange struct {
	VMID, OrgID   int64
	Role          string // the node's: RoleControlPlane or RoleWorker
	To, Message   string
	From          []string
	FromOnceReady []string
	InitialOnly   bool
	MarksReady    bool
}

// PhaseOutcome is what AdvancePhase found: the cluster's status, the node's
// phase when the statement began, whether it is the initial node, and
// whether it moved.
type PhaseOutcome struct {
	ClusterStatus string
	Current       string
	Initial       bool
	Moved         bool
}

// AdvancePhase records a phase in one statement, with when the node first
// reached it (phase_times keeps the first: a repeated report refreshes the
// message only): the UPDATE itself is
// guarded by the allowed phases, so two racing reports cannot both pass a
// check made on a row the other one changed (under READ COMMITTED, a row
// updated concurrently is re-checked against the guard in its new
// version). ErrNotFound: vmID is no node of c.Role of org's clusters (a
// role's phases are its own: clusterfacts' table).
func (s *Store) AdvancePhase(ctx context.Context, c PhaseChange) (PhaseOutcome, error) {
	var out PhaseOutcome
	if err := scanPhaseOutcome(s.pool.QueryRow(ctx, advancePhase, c.args()...), &out); err != nil {
		return out, c.failed(err)
	}
	return out, nil
}

// advancePhase is AdvancePhase's statement, over PhaseChange.args.
const advancePhase = `
	WITH node AS (
		SELECT n.id, n.phase, k.status, n.ordinal = (
			SELECT min(m.ordinal) FROM kube_nodes m WHERE m.kube_cluster_id = n.kube_cluster_id AND NOT m.retiring) AS initial
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
		WHERE n.vm_id = $1 AND k.org_id = $2 AND n.role = $9
	), moved AS (
		UPDATE kube_nodes n SET phase = $3, message = $4, updated_at = now(),
			ready_at = CASE WHEN $8 THEN coalesce(n.ready_at, now()) ELSE n.ready_at END,
			phase_times = jsonb_build_object($3::text, now()) || n.phase_times
		FROM node
		WHERE n.id = node.id AND node.status = 'active' AND (node.initial OR NOT $7)
		  AND (n.phase = ANY($5) OR (n.ready_at IS NOT NULL AND n.phase = ANY($6)))
		RETURNING n.id
	)
	SELECT node.status, node.phase, node.initial, EXISTS (SELECT 1 FROM moved) FROM node`

func (c PhaseChange) args() []any {
	return []any{c.VMID, c.OrgID, c.To, c.Message, c.From, c.FromOnceReady, c.InitialOnly, c.MarksReady, c.Role}
}

func (c PhaseChange) failed(err error) error {
	return fmt.Errorf("recording phase %s of vm %d: %w", c.To, c.VMID, notFound(err))
}

func scanPhaseOutcome(row pgx.Row, out *PhaseOutcome) error {
	return row.Scan(&out.ClusterStatus, &out.Current, &out.Initial, &out.Moved)
}
