package store

import (
	"context"
	"errors"
	"fmt"

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
