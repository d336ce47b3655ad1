package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// The tokens founding sends with its VM creates cannot be told from the
// cluster id: no token names its cluster, none repeats across nodes or
// clusters, and each cluster's key is recorded with it (so a retry, the
// reconciler's included, sends the same token: faultinjection's lost
// answer tests).
func TestCreateTokensAreNotDerivedFromTheClusterID(t *testing.T) {
	s := newStack(t)
	ids := []int64{s.Found(1, stacktest.ThreeNodes).ClusterID, s.Found(1, stacktest.ThreeNodes).ClusterID}
	rows, _ := s.pool.Query(context.Background(), `SELECT v.idempotency_token FROM vms v
		JOIN kube_nodes n ON n.vm_id = v.id WHERE n.kube_cluster_id = ANY($1)`, ids)
	tokens, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tokens) != 6 {
		t.Fatalf("%d tokens (%v), want 6", len(tokens), err)
	}
	seen := map[string]bool{}
	for _, tok := range tokens {
		if seen[tok] || strings.Contains(tok, "cluster") || strings.Contains(tok, "-"+itoa(ids[0])+"-") ||
			strings.Contains(tok, "-"+itoa(ids[1])+"-") || !strings.HasPrefix(tok, "k8sapi-") {
			t.Errorf("token %q repeats or names its cluster", tok)
		}
		seen[tok] = true
	}
	var keyed int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM kube_clusters
		WHERE id = ANY($1) AND octet_length(create_token_key) = 32`, ids).Scan(&keyed); err != nil || keyed != 2 {
		t.Errorf("%d of 2 clusters have their create token key recorded (%v)", keyed, err)
	}
}
