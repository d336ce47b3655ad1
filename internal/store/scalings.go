package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Scaling states (control_plane_scalings.state, migration 027): scaling is
// an operation the reconciler drives under the cluster's lease; the others
// are settled.
const (
	ScalingDone   = "done"
	ScalingFailed = "failed"
)

// ErrScaling means a scaling of the cluster's control plane is already in
// progress.
var ErrScaling = errors.New("a control-plane scaling of the cluster is in progress")

// Scaling is a control_plane_scalings row: from which count to which, and
// how far it is.
type Scaling struct {
	ID          int64     `db:"id"`
	ClusterID   int64     `db:"kube_cluster_id"`
	From        int       `db:"from_count"`
	To          int       `db:"to_count"`
	State       string    `db:"state"`
	StateReason string    `db:"state_reason"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

const scalingColumns = `id, kube_cluster_id, from_count, to_count, state, state_reason, created_at, updated_at`

// BeginScaling commits a scaling of the org's cluster from its recorded
// count to to before any remote call, in one transaction that locks the
// cluster (active): the scaling row and the cluster's new count. A
// replacement in progress: ErrReplacing; a scaling: ErrScaling.
func (s *Store) BeginScaling(ctx context.Context, orgID, clusterID int64, to int) (Scaling, error) {
	var out Scaling
	err := s.inActiveCluster(ctx, orgID, clusterID, func(tx pgx.Tx) error {
		if err := noReplacement(ctx, tx, clusterID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `WITH old AS (SELECT control_plane_count FROM kube_clusters WHERE id = $1),
			resized AS (UPDATE kube_clusters SET control_plane_count = $2, updated_at = now() WHERE id = $1)
			INSERT INTO control_plane_scalings (kube_cluster_id, from_count, to_count)
			SELECT $1, control_plane_count, $2 FROM old RETURNING `+scalingColumns, clusterID, to)
		var err error
		out, err = oneRow[Scaling](rows, "recording the scaling")
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "control_plane_scalings_one_live" {
			return ErrScaling
		}
		return err
	})
	if err != nil {
		return out, fmt.Errorf("beginning a control-plane scaling of cluster %d: %w", clusterID, err)
	}
	return out, nil
}

// noReplacement: ErrReplacing when a replacement of the cluster is live;
// noScaling: ErrScaling when a scaling is (the cluster's row is locked by
// tx, so none begins before commit).
func noReplacement(ctx context.Context, tx pgx.Tx, clusterID int64) error {
	return noneLive(ctx, tx, `node_replacements WHERE kube_cluster_id = $1 AND state IN ('replacing', 'failing')`, clusterID, ErrReplacing)
}

func noScaling(ctx context.Context, tx pgx.Tx, clusterID int64) error {
	return noneLive(ctx, tx, `control_plane_scalings WHERE kube_cluster_id = $1 AND state = 'scaling'`, clusterID, ErrScaling)
}

// noneLive is live when a row of rows (a table and its condition on $1)
// exists.
func noneLive(ctx context.Context, tx pgx.Tx, rows string, clusterID int64, live error) error {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+rows+`)`, clusterID).Scan(&exists)
	if err == nil && exists {
		err = live
	}
	return err
}

// LiveScaling is the cluster's scaling in progress: ErrNotFound when there
// is none.
func (s *Store) LiveScaling(ctx context.Context, clusterID int64) (Scaling, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+scalingColumns+` FROM control_plane_scalings
		WHERE kube_cluster_id = $1 AND state = 'scaling'`, clusterID)
	return oneRow[Scaling](rows, fmt.Sprintf("loading the control-plane scaling in progress of cluster %d", clusterID))
}

// ClaimExpiredScaling takes over one active cluster whose scaling is in
// progress and whose lease is free or ran out, by taking the cluster's
// lease (as ClaimExpiredReplacement): ErrNotFound when there is none.
func (s *Store) ClaimExpiredScaling(ctx context.Context, lease Lease, now time.Time) (Cluster, error) {
	return s.claimActive(ctx, lease, now, "a control-plane scaling in progress",
		`JOIN control_plane_scalings g ON g.kube_cluster_id = k.id AND g.state = 'scaling'`)
}

// IntendScalingNode inserts the row of the scaling's next new
// control-plane node (no VM yet, its ordinal after every one the cluster
// handed out), fenced by the owner's lease, and returns it; the scaling's
// updated_at is when it was intended (its ready deadline counts from it).
func (s *Store) IntendScalingNode(ctx context.Context, clusterID int64, owner string, scalingID int64, name func(ordinal int) string) (Node, error) {
	var n Node
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var held bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM kube_clusters WHERE `+leaseHeld+` FOR UPDATE)`,
			clusterID, owner).Scan(&held); err != nil || !held {
			return errors.Join(err, ErrLeaseLost)
		}
		ordinal, err := takeOrdinals(ctx, tx, clusterID, 1)
		if err != nil {
			return err
		}
		n = Node{ClusterID: clusterID, Role: RoleControlPlane, ScalingID: scalingID, Ordinal: ordinal, Name: name(ordinal)}
		if _, err := tx.Exec(ctx, `UPDATE control_plane_scalings SET updated_at = now() WHERE id = $1`, scalingID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name, role, scaling_id)
			VALUES ($1, $2, $3, 'control-plane', $4) RETURNING id`, clusterID, ordinal, n.Name, scalingID).Scan(&n.ID)
	})
	if err != nil {
		return n, fmt.Errorf("intending a new control-plane node of cluster %d: %w", clusterID, err)
	}
	return n, nil
}

// ScalingEnd is how a scaling ends: its state and why, and the node row to
// remove (a new node that never reported ready in time is kept: 0).
type ScalingEnd struct {
	State, Reason string
	Remove        int64
}

// EndScaling ends the scaling as e says and lets go of the cluster's
// lease, in one transaction fenced by the owner's lease; a scaling that
// ends short of its count records the count the cluster has.
func (s *Store) EndScaling(ctx context.Context, clusterID int64, owner string, id int64, e ScalingEnd) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := letGoInTx(ctx, tx, clusterID, owner, fmt.Sprintf("ending scaling %d", id)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH ended AS (
				UPDATE control_plane_scalings SET state = $3, state_reason = $4, updated_at = now()
				WHERE id = $2 AND kube_cluster_id = $1 AND state = 'scaling' RETURNING 1
			), removed AS (
				DELETE FROM kube_nodes WHERE id = $5 AND kube_cluster_id = $1 RETURNING 1
			)
			UPDATE kube_clusters k SET control_plane_count = (SELECT count(*) FROM kube_nodes n
				WHERE n.kube_cluster_id = k.id AND n.role = 'control-plane' AND n.id <> $5)
			WHERE k.id = $1 AND $3 <> 'done'`, clusterID, id, e.State, e.Reason, e.Remove)
		if err != nil {
			return fmt.Errorf("ending scaling %d: %w", id, err)
		}
		return nil
	})
}
