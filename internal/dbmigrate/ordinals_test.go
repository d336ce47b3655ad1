package dbmigrate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/excloud/k8sapi/internal/dbmigrate"
)

// Migration 022 carries a cluster's ordinal high-water mark over from what
// its rows still say: the highest ordinal of its nodes (3 here) and of the
// names its replacements recorded (a turned-back one's new node, cp-5,
// whose row is gone). A cluster with no such row keeps its control-plane
// count.
func TestOrdinalHighWaterMarkIsCarriedOver(t *testing.T) {
	ctx := context.Background()
	dsn, pool, env := databaseAt(t, 6)
	c, _, _ := v1Cluster(t, pool, env, 1)
	bare, _, _ := v1Cluster(t, pool, env, 3)
	if err := dbmigrate.ApplyK8sapiTo(ctx, dsn, true, 21); err != nil {
		t.Fatal(err)
	}
	name := func(o int) string { return fmt.Sprintf("cp-%d.cluster-%d.internal", o, c.ID) }
	var oldID int64
	if err := pool.QueryRow(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name) VALUES ($1, 1, $2), ($1, 3, $3)
		RETURNING id`, c.ID, name(1), name(3)).Scan(&oldID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO node_replacements (kube_cluster_id, old_node_id, old_vm_id, old_node_name, new_node_name, state)
		VALUES ($1, $2, 101, $3, $4, 'failed')`, c.ID, oldID, name(1), name(5)); err != nil {
		t.Fatal(err)
	}
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]int{c.ID: 5, bare.ID: 3} {
		var got int
		if err := pool.QueryRow(ctx, `SELECT last_ordinal FROM kube_clusters WHERE id = $1`, id).Scan(&got); err != nil || got != want {
			t.Errorf("cluster %d's last ordinal = %d (%v), want %d", id, got, err, want)
		}
	}
}
