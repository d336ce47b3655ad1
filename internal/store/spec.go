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

// RecentReplacements are the cluster's newest control-plane node
// replacements, at most limit, newest first: the one in progress and
// how the last ones ended.
func (s *Store) RecentReplacements(ctx context.Context, clusterID int64, limit int) ([]Replacement, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+replacementColumns+` FROM node_replacements
		WHERE kube_cluster_id = $1 ORDER BY id DESC LIMIT $2`, clusterID, limit)
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Replacement])
	if err != nil {
		return nil, fmt.Errorf("loading the replacements of cluster %d: %w", clusterID, err)
	}
	return rs, nil
}
