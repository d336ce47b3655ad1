package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Replacement states (node_replacements.state, migration 018): replacing
// and failing (being turned back) are an operation the reconciler drives
// under the cluster's lease; the others are settled.
const (
	ReplacementFailing = "failing"
	ReplacementDone    = "done"
	ReplacementFailed  = "failed"
)

// ErrReplacing means a replacement of the cluster is already in progress.
var ErrReplacing = errors.New("a node replacement of the cluster is in progress")

// Replacement is a node_replacements row: which control-plane node is
// replaced by which, and how far it is.
type Replacement struct {
	ID          int64     `db:"id"`
	ClusterID   int64     `db:"kube_cluster_id"`
	OldNodeID   int64     `db:"old_node_id"`
	OldVMID     int64     `db:"old_vm_id"`
	OldNodeName string    `db:"old_node_name"`
	NewNodeID   *int64    `db:"new_node_id"`
	NewNodeName string    `db:"new_node_name"`
	State       string    `db:"state"`
	StateReason string    `db:"state_reason"` // its operation's message
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	// LastOp is the replacement's operation (migration 025).
	LastOp *OpRecord `db:"last_op"`
}

var replacementColumns = `id, kube_cluster_id, old_node_id, old_vm_id, old_node_name, new_node_id, new_node_name,
	state, created_at, updated_at, ` + lastOp(TargetNodeReplacement, "node_replacements.id", "state_reason")

// ReplacementStart is the start of a replacement: Old (a control-plane
// node of the org's cluster) is replaced by a new node named by Name.
type ReplacementStart struct {
	OrgID int64
	Old   Node
	Name  func(ordinal int) string
	// KubernetesVersion is the new node's version: "" for its cluster's,
	// an upgrade's target for the replacement of an upgrade.
	KubernetesVersion string
}

// BeginReplacement commits a replacement before any remote call, in one
// transaction that locks the cluster (active, of the org): the replacement
// row, the old node marked retiring and the new node's row (no VM yet, its
// ordinal after every one the cluster handed out), and its operation, held
// by no lease (the reconciler claims it at once). A cluster with a replacement in
// progress: ErrReplacing; with a control-plane scaling: ErrScaling; an old node that is gone or retiring already:
// ErrNotFound.
func (s *Store) BeginReplacement(ctx context.Context, r ReplacementStart) (Replacement, error) {
	var out Replacement
	err := s.inActiveCluster(ctx, r.OrgID, r.Old.ClusterID, func(tx pgx.Tx) error {
		if err := noLiveControlPlaneOp(ctx, tx, r.Old.ClusterID); err != nil {
			return err
		}
		id, err := insertReplacement(ctx, tx, r.Old)
		if err != nil {
			return err
		}
		if err := retireForReplacement(ctx, tx, r.Old); err != nil {
			return err
		}
		out, err = intendReplacementNode(ctx, tx, id, r)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("beginning the replacement of node %s: %w", r.Old.Name, err)
	}
	return out, nil
}

func insertReplacement(ctx context.Context, tx pgx.Tx, old Node) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `WITH r AS (
			INSERT INTO node_replacements (kube_cluster_id, old_node_id, old_vm_id, old_node_name)
			VALUES ($1, $2, $3, $4) RETURNING id
		), op AS (
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, spec)
			SELECT '`+KindNodeReplacement+`', $1, '`+TargetNodeReplacement+`', r.id, 'running', '`+ReasonInProgress+`',
				jsonb_build_object('old_node_id', $2::bigint, 'old_vm_id', $3::bigint) FROM r
		)
		SELECT id FROM r`, old.ClusterID, old.ID, old.VMID, old.Name).Scan(&id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.ConstraintName == "node_replacements_one_live" {
		return 0, ErrReplacing
	}
	return id, err
}

// retireForReplacement marks the old node retiring: DNS, the snapshot
// node and the initial node are chosen among the others from now on.
func retireForReplacement(ctx context.Context, tx pgx.Tx, old Node) error {
	tag, err := tx.Exec(ctx, `UPDATE kube_nodes SET retiring = true
		WHERE id = $1 AND kube_cluster_id = $2 AND role = 'control-plane' AND NOT retiring`, old.ID, old.ClusterID)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return err
}

// intendReplacementNode inserts the new node's row and names it on the
// replacement.
func intendReplacementNode(ctx context.Context, tx pgx.Tx, id int64, r ReplacementStart) (Replacement, error) {
	ordinal, err := takeOrdinals(ctx, tx, r.Old.ClusterID, 1)
	if err != nil {
		return Replacement{}, err
	}
	name := r.Name(ordinal)
	var nodeID int64
	if err := tx.QueryRow(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name, role, replacement_id, kubernetes_version)
		VALUES ($1, $2, $3, 'control-plane', $4, $5) RETURNING id`, r.Old.ClusterID, ordinal, name, id, r.KubernetesVersion).Scan(&nodeID); err != nil {
		return Replacement{}, err
	}
	rows, _ := tx.Query(ctx, `UPDATE node_replacements SET new_node_id = $2, new_node_name = $3 WHERE id = $1
		RETURNING `+replacementColumns, id, nodeID, name)
	return oneRow[Replacement](rows, "intending the new node")
}

// LiveReplacement is the cluster's replacement in progress: ErrNotFound
// when there is none.
func (s *Store) LiveReplacement(ctx context.Context, clusterID int64) (Replacement, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+replacementColumns+` FROM node_replacements
		WHERE kube_cluster_id = $1 AND state IN ('replacing', 'failing')`, clusterID)
	return oneRow[Replacement](rows, fmt.Sprintf("loading the replacement in progress of cluster %d", clusterID))
}

// ReplacementEnd is how a replacement ends: its state and why, the node
// row to remove (its VM is gone; 0: none) and the node row that is no
// longer retiring (0: none).
type ReplacementEnd struct {
	State, Reason string
	Remove, Keep  int64
	// CRL, when not nil, is the etcd CRL that lists the removed node's
	// etcd-CA serials: stored in the same transaction as the removal.
	CRL *NewEtcdCRL
}

// EndReplacement ends the replacement and its operation as e says, in
// one transaction fenced by the owner's lease.
func (s *Store) EndReplacement(ctx context.Context, clusterID int64, owner string, id int64, e ReplacementEnd) error {
	reason := ReasonFailed
	if e.State == ReplacementDone {
		reason = ReasonSucceeded
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, endOperation+` AND target_type = '`+TargetNodeReplacement+`' AND target_id = $6`,
			clusterID, owner, endedState(reason), reason, e.Reason, id)
		if err != nil {
			return fmt.Errorf("ending replacement %d: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("ending replacement %d: %w", id, ErrLeaseLost)
		}
		if e.CRL != nil {
			if err := storeEtcdCRL(ctx, tx, clusterID, e.CRL); err != nil {
				return fmt.Errorf("ending replacement %d: %w", id, err)
			}
		}
		_, err = tx.Exec(ctx, `WITH ended AS (
				UPDATE node_replacements SET state = $3, updated_at = now()
				WHERE id = $2 AND kube_cluster_id = $1 AND state IN ('replacing', 'failing') RETURNING 1
			), kept AS (
				UPDATE kube_nodes SET retiring = false WHERE id = $5 AND kube_cluster_id = $1 RETURNING 1
			)
			DELETE FROM kube_nodes WHERE id = $4 AND kube_cluster_id = $1`, clusterID, id, e.State, e.Remove, e.Keep)
		if err != nil {
			return fmt.Errorf("ending replacement %d: %w", id, err)
		}
		return nil
	})
}

// FailReplacement moves the owner's replacement to failing with reason:
// its new node is to be removed and the old one kept.
func (s *Store) FailReplacement(ctx context.Context, clusterID int64, owner string, id int64, reason string) error {
	return s.fenced(ctx, "turning back the replacement", `WITH r AS (
			UPDATE node_replacements r SET state = 'failing', updated_at = now()
			WHERE r.id = $3 AND r.kube_cluster_id = $1 AND r.state = 'replacing' AND `+opHeld("$1")+`
			RETURNING r.id
		)
		UPDATE operations o SET reason = '`+ReasonTurningBack+`', message = $4, updated_at = now()
		FROM r WHERE o.target_type = '`+TargetNodeReplacement+`' AND o.target_id = r.id AND o.lease_owner = $2
		  AND o.ended_at IS NULL`, clusterID, owner, id, reason)
}
