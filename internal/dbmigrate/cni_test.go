package dbmigrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/dbmigrate"
)

// Migration 007: a cluster founded before it (every one a Cilium cluster)
// reads back as cilium, and the column takes no CNI k8sapi does not know;
// with 021, every CNI it knows (flannel's included).
func TestClusterCNIMigration(t *testing.T) {
	ctx := context.Background()
	dsn, pool, env := databaseAt(t, 6)
	c, _, _ := v1Cluster(t, pool, env, 1)
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil {
		t.Fatal(err)
	}
	var cni string
	if err := pool.QueryRow(ctx, `SELECT cni FROM kube_clusters WHERE id = $1`, c.ID).Scan(&cni); err != nil || cni != "cilium" {
		t.Fatalf("cni of a cluster founded before 007: %q, %v", cni, err)
	}
	_, err := pool.Exec(ctx, `UPDATE kube_clusters SET cni = 'calico' WHERE id = $1`, c.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "kube_clusters_cni_check" {
		t.Errorf("an unknown CNI stored: %v", err)
	}
	for _, known := range clusterfacts.CNIs() {
		if _, err := pool.Exec(ctx, `UPDATE kube_clusters SET cni = $2 WHERE id = $1`, c.ID, string(known)); err != nil {
			t.Errorf("the %s CNI not stored: %v", known, err)
		}
	}
}
