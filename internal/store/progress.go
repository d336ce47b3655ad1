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
// whether it moved (a report of what the row already says counts as moved:
// it is recorded).
type PhaseOutcome struct {
	ClusterStatus string
	Current       string
	Initial       bool
	Moved         bool
}

// AdvancePhase records a phase in one statement, with when the node first
// reached it (phase_times keeps the first: a repeated report refreshes the
// message only, and one with the same message writes nothing): the UPDATE
// itself is guarded by the allowed phases, so two racing reports cannot both pass a
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

// advancePhase is AdvancePhase's statement, over PhaseChange.args. A
// report of what the node's row already says (its phase with its time, its
// message, its ready mark) writes nothing, so its transaction commits no
// WAL: it is answered as moved when the guard allows it on the row as the
// statement began, as if it ran before any report racing it. updated_at is
// when the phase or its message last changed (what "phase since" shows), no
// heartbeat: a node's liveness is its health report's (health_reported_at).
var advancePhase = `
	WITH node AS (
		SELECT n.id, n.phase, n.ready_at, k.status, n.ordinal = (
			SELECT min(m.ordinal) FROM kube_nodes m WHERE m.kube_cluster_id = n.kube_cluster_id AND NOT m.retiring) AS initial,
			n.phase = $3 AND n.message = $4 AND n.phase_times ? $3 AND (n.ready_at IS NOT NULL OR NOT $8) AS recorded
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
		WHERE n.vm_id = $1 AND k.org_id = $2 AND n.role = $9
	), moved AS (
		UPDATE kube_nodes n SET phase = $3, message = $4, updated_at = now(),
			ready_at = CASE WHEN $8 THEN coalesce(n.ready_at, now()) ELSE n.ready_at END,
			phase_times = jsonb_build_object($3::text, now()) || n.phase_times
		FROM node
		WHERE n.id = node.id AND NOT node.recorded AND ` + phaseGuard("n") + `
		RETURNING n.id
	)
	SELECT node.status, node.phase, node.initial,
		EXISTS (SELECT 1 FROM moved) OR coalesce(node.recorded AND ` + phaseGuard("node") + `, false) FROM node`

// phaseGuard is the guard of a move over the node's phase and ready mark as
// row has them: the UPDATE's own row (re-checked against a version a
// concurrent writer made) or the node as the statement began. NULL where
// From or FromOnceReady is (none): refused.
func phaseGuard(row string) string {
	return `node.status = 'active' AND (node.initial OR NOT $7)
		  AND (` + row + `.phase = ANY($5) OR (` + row + `.ready_at IS NOT NULL AND ` + row + `.phase = ANY($6)))`
}

func (c PhaseChange) args() []any {
	return []any{c.VMID, c.OrgID, c.To, c.Message, c.From, c.FromOnceReady, c.InitialOnly, c.MarksReady, c.Role}
}

func (c PhaseChange) failed(err error) error {
	return fmt.Errorf("recording phase %s of vm %d: %w", c.To, c.VMID, notFound(err))
}

func scanPhaseOutcome(row pgx.Row, out *PhaseOutcome) error {
	return row.Scan(&out.ClusterStatus, &out.Current, &out.Initial, &out.Moved)
}
