package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrClusterNameTaken means another of the org's clusters that is not
// deleted keeps a cluster file of the same name.
var ErrClusterNameTaken = errors.New("another cluster of the org has this name")

// SetClusterSpec keeps spec (a cluster file as JSON) as the cluster's and
// sets the snapshot schedule it names, on one of org's clusters that is
// not deleted.
func (s *Store) SetClusterSpec(ctx context.Context, orgID, id int64, spec []byte, intervalSeconds int) error {
	tag, err := s.pool.Exec(ctx, `UPDATE kube_clusters SET spec = $3::jsonb, etcd_snapshot_interval_seconds = $4, updated_at = now()
		WHERE org_id = $1 AND id = $2 AND status <> 'deleted'`, orgID, id, string(spec), intervalSeconds)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.ConstraintName == "kube_clusters_spec_name":
		return ErrClusterNameTaken
	case err != nil:
		return fmt.Errorf("keeping cluster %d's spec: %w", id, err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("keeping cluster %d's spec: %w", id, ErrNotFound)
	}
	return nil
}

// RemediationSettings are a cluster's remediation settings as stored
// (migration 028).
type RemediationSettings struct {
	UnhealthyAfterSeconds int `db:"unhealthy_after_seconds"`
	MaxUnhealthyPercent   int `db:"max_unhealthy_percent"`
}

// SetRemediation sets the remediation settings given (nil: kept) of one
// of org's clusters, while it is active (ErrNotFound, ErrClusterNotActive
// otherwise), and is the settings it had.
func (s *Store) SetRemediation(ctx context.Context, orgID, clusterID int64, unhealthyAfterSeconds, maxUnhealthyPercent *int) (RemediationSettings, error) {
	var old RemediationSettings
	err := s.inActiveCluster(ctx, orgID, clusterID, func(tx pgx.Tx) error {
		// The row is locked: old is what the update replaces.
		rows, _ := tx.Query(ctx, `WITH old AS (SELECT unhealthy_after_seconds, max_unhealthy_percent FROM kube_clusters WHERE id = $1),
			changed AS (UPDATE kube_clusters SET unhealthy_after_seconds = coalesce($2, unhealthy_after_seconds),
				max_unhealthy_percent = coalesce($3, max_unhealthy_percent), updated_at = now() WHERE id = $1)
			SELECT unhealthy_after_seconds, max_unhealthy_percent FROM old`, clusterID, unhealthyAfterSeconds, maxUnhealthyPercent)
		var err error
		old, err = oneRow[RemediationSettings](rows, "changing the remediation settings")
		return err
	})
	if err != nil {
		return old, fmt.Errorf("setting cluster %d's remediation settings: %w", clusterID, err)
	}
	return old, nil
}
