package store

import (
	"context"
	"fmt"
)

// PhaseChange asks to move one VM's node to phase To, only if the node is in
// one of the phases From, the cluster is org's and it is active.
type PhaseChange struct {
	VMID, OrgID int64
	To, Message string
	From        []string
}

// PhaseOutcome is what AdvancePhase found: the cluster's status, the node's
// phase when the statement began, and whether the node moved.
type PhaseOutcome struct {
	ClusterStatus string
	Current       string
	Moved         bool
}

// AdvancePhase records a phase in one statement: the UPDATE itself is
// guarded by the allowed phases, so two racing reports cannot both pass a
// check made on a row the other one changed (under READ COMMITTED, a row
// updated concurrently is re-checked against the guard in its new
// version). ErrNotFound: vmID is no node of org's clusters.
func (s *Store) AdvancePhase(ctx context.Context, c PhaseChange) (PhaseOutcome, error) {
	var out PhaseOutcome
	err := s.pool.QueryRow(ctx, `
		WITH node AS (
			SELECT n.id, n.phase, k.status
			FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
			WHERE n.vm_id = $1 AND k.org_id = $2
		), moved AS (
			UPDATE kube_nodes n SET phase = $3, message = $4, updated_at = now()
			FROM node
			WHERE n.id = node.id AND node.status = 'active' AND n.phase = ANY($5)
			RETURNING n.id
		)
		SELECT node.status, node.phase, EXISTS (SELECT 1 FROM moved) FROM node`,
		c.VMID, c.OrgID, c.To, c.Message, c.From).Scan(&out.ClusterStatus, &out.Current, &out.Moved)
	if err != nil {
		return out, fmt.Errorf("recording phase %s of vm %d: %w", c.To, c.VMID, notFound(err))
	}
	return out, nil
}
