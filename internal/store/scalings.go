package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Scaling states as the API shows them: a scaling is its operation
// (operations, kind KindControlPlaneScaling), running while the
// reconciler drives it.
const (
	ScalingRunning = "scaling"
	ScalingDone    = "done"
	ScalingFailed  = "failed"
)

// ErrScaling means a scaling of the cluster's control plane is already in
// progress.
var ErrScaling = errors.New("a control-plane scaling of the cluster is in progress")

// Scaling is a control-plane scaling's operation: from which count to
// which (its spec), and how far it is.
type Scaling struct {
	ID          int64     `db:"id"`
	ClusterID   int64     `db:"kube_cluster_id"`
	From        int       `db:"from_count"`
	To          int       `db:"to_count"`
	State       string    `db:"state"`
	StateReason string    `db:"state_reason"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	// ChangedAt is when the scaling last began a membership change (a new
	// member intended, a leaving one marked), recorded in its spec: a
	// release moves updated_at at every wait, so a deadline counts from
	// this.
	ChangedAt time.Time `db:"changed_at"`
}

const scalingColumns = `id, kube_cluster_id, (spec->>'from_count')::int AS from_count, (spec->>'to_count')::int AS to_count,
	CASE state WHEN 'running' THEN '` + ScalingRunning + `' WHEN 'succeeded' THEN '` + ScalingDone + `' ELSE '` + ScalingFailed + `' END AS state,
	message AS state_reason, created_at, updated_at, coalesce((spec->>'changed_at')::timestamptz, created_at) AS changed_at`

// markChanged is the SET of a write that begins a membership change.
const markChanged = `updated_at = now(), spec = spec || jsonb_build_object('changed_at', now())`

// liveControlPlaneOps is the answer to each kind of live operation that
// holds a control-plane membership change off: one change at a time.
var liveControlPlaneOps = map[string]error{KindNodeReplacement: ErrReplacing, KindControlPlaneScaling: ErrScaling}

// noLiveControlPlaneOp is the one live-operation check of a membership
// change: the error of a live replacement or scaling of the cluster (its
// row locked by tx, so none begins before commit), nil when none is.
func noLiveControlPlaneOp(ctx context.Context, tx pgx.Tx, clusterID int64) error {
	kinds := make([]string, 0, len(liveControlPlaneOps))
	for k := range liveControlPlaneOps {
		kinds = append(kinds, k)
	}
	var kind string
	err := tx.QueryRow(ctx, `SELECT kind FROM operations WHERE kube_cluster_id = $1 AND ended_at IS NULL AND kind = ANY($2) LIMIT 1`,
		clusterID, kinds).Scan(&kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return liveControlPlaneOps[kind]
}

// BeginScaling commits a scaling of the org's cluster from its recorded
// count to to before any remote call, in one transaction that locks the
// cluster (active): its operation, held by no lease (the reconciler claims
// it at once), and the cluster's new count. A replacement in progress:
// ErrReplacing; a scaling: ErrScaling.
func (s *Store) BeginScaling(ctx context.Context, orgID, clusterID int64, to int) (Scaling, error) {
	var out Scaling
	err := s.inActiveCluster(ctx, orgID, clusterID, func(tx pgx.Tx) error {
		if err := noLiveControlPlaneOp(ctx, tx, clusterID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `WITH old AS (SELECT control_plane_count FROM kube_clusters WHERE id = $1),
			resized AS (UPDATE kube_clusters SET control_plane_count = $2, updated_at = now() WHERE id = $1)
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, spec)
			SELECT '`+KindControlPlaneScaling+`', $1, '`+TargetCluster+`', $1, 'running', '`+ReasonInProgress+`',
				jsonb_build_object('from_count', control_plane_count, 'to_count', $2::int) FROM old
			RETURNING `+scalingColumns, clusterID, to)
		var err error
		out, err = oneRow[Scaling](rows, "recording the scaling")
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "operations_one_live" {
			return ErrScaling
		}
		return err
	})
	if err != nil {
		return out, fmt.Errorf("beginning a control-plane scaling of cluster %d: %w", clusterID, err)
	}
	return out, nil
}

// oneRow is the one row of type T rows holds; ErrNotFound, wrapped in
// what, when there is none.
func oneRow[T any](rows pgx.Rows, what string) (T, error) {
	r, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[T])
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, notFound(err))
	}
	return r, nil
}

// LiveScaling is the cluster's scaling in progress: ErrNotFound when there
// is none.
func (s *Store) LiveScaling(ctx context.Context, clusterID int64) (Scaling, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+scalingColumns+` FROM operations
		WHERE kube_cluster_id = $1 AND kind = '`+KindControlPlaneScaling+`' AND ended_at IS NULL`, clusterID)
	return oneRow[Scaling](rows, fmt.Sprintf("loading the control-plane scaling in progress of cluster %d", clusterID))
}

// IntendScalingNode inserts the row of the scaling's next new
// control-plane node (no VM yet, its ordinal after every one the cluster
// handed out), fenced by the owner's hold of the scaling, and returns it;
// the scaling's changed_at is when it was intended (its ready deadline
// counts from it).
func (s *Store) IntendScalingNode(ctx context.Context, clusterID int64, owner string, scalingID int64, name func(ordinal int) string) (Node, error) {
	var n Node
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE operations SET `+markChanged+`
			WHERE id = $3 AND kube_cluster_id = $1 AND lease_owner = $2 AND ended_at IS NULL`, clusterID, owner, scalingID)
		if err != nil || tag.RowsAffected() == 0 {
			return errors.Join(err, ErrLeaseLost)
		}
		ordinal, err := takeOrdinals(ctx, tx, clusterID, 1)
		if err != nil {
			return err
		}
		n = Node{ClusterID: clusterID, Role: RoleControlPlane, ScalingID: scalingID, Ordinal: ordinal, Name: name(ordinal)}
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
	// Keep is a leaving member whose etcd removal was never reported: no
	// longer retiring, it stays a member (0: none).
	Keep int64
}

// EndScaling ends the scaling's operation as e says, in one transaction
// fenced by the owner's lease; a scaling that ends short of its count
// records the count the cluster has.
func (s *Store) EndScaling(ctx context.Context, clusterID int64, owner string, id int64, e ScalingEnd) error {
	reason := ReasonFailed
	if e.State == ScalingDone {
		reason = ReasonSucceeded
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, endOperation+` AND id = $6`, clusterID, owner, endedState(reason), reason, e.Reason, id)
		if err != nil {
			return fmt.Errorf("ending scaling %d: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("ending scaling %d: %w", id, ErrLeaseLost)
		}
		_, err = tx.Exec(ctx, `WITH removed AS (
				DELETE FROM kube_nodes WHERE id = $3 AND kube_cluster_id = $1 RETURNING 1
			), kept AS (
				UPDATE kube_nodes SET retiring = false WHERE id = $4 AND kube_cluster_id = $1 RETURNING 1
			)
			UPDATE kube_clusters k SET control_plane_count = (SELECT count(*) FROM kube_nodes n
				WHERE n.kube_cluster_id = k.id AND n.role = 'control-plane' AND n.id <> $3)
			WHERE k.id = $1 AND $2 <> '`+ScalingDone+`'`, clusterID, e.State, e.Remove, e.Keep)
		if err != nil {
			return fmt.Errorf("ending scaling %d: %w", id, err)
		}
		return nil
	})
}
