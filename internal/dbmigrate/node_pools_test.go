package dbmigrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/excloud/k8sapi/internal/dbmigrate"
)

// Migration 017: nodes founded before it are control-plane nodes of no
// pool, and a worker row must name its pool (and only a worker may).
func TestNodePoolsMigration(t *testing.T) {
	ctx := context.Background()
	dsn, pool, env := databaseAt(t, 15)
	c, _, _ := v1Cluster(t, pool, env, 1)
	if _, err := pool.Exec(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name) VALUES ($1, 1, 'cp-1')`, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil {
		t.Fatal(err)
	}
	var role string
	var poolID *int64
	if err := pool.QueryRow(ctx, `SELECT role, node_pool_id FROM kube_nodes WHERE kube_cluster_id = $1`, c.ID).Scan(&role, &poolID); err != nil || role != "control-plane" || poolID != nil {
		t.Fatalf("a node from before 017: role %q, pool %v, %v; want control-plane of no pool", role, poolID, err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name, role) VALUES ($1, 2, 'w-2', 'worker')`, c.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "kube_nodes_worker_has_pool" {
		t.Errorf("a worker without a pool stored: %v", err)
	}
}
