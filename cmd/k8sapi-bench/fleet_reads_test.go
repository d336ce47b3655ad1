package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/internal/usecase"
)

// oneOrgFleet seeds n clusters of one org (every fleetOrgs-th index is
// org 1's) on a fresh database, as the fleet part seeds them: a page's
// cost is its clusters', not the fleet's, so a page of the real fleet
// needs only a page of clusters.
func oneOrgFleet(b *testing.B, n int) (*store.Store, int64) {
	b.Helper()
	ctx := context.Background()
	dsn, drop, err := testenv.FreshDatabase(ctx, "k8sapi_bench_list")
	if err != nil {
		b.Skipf("no database: %v", err)
	}
	b.Cleanup(func() { _ = drop(context.Background()) })
	pool, err := store.OpenPool(ctx, dsn, store.PoolSettings{MaxConns: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	f := &fleet{st: store.New(pool), t0: time.Now(), size: n * fleetOrgs}
	for i := range n {
		c, err := f.seedCluster(ctx, i*fleetOrgs)
		if err != nil {
			b.Fatal(err)
		}
		f.clusters = append(f.clusters, c)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	return f.st, f.clusters[0].org
}

// BenchmarkListPage is GET /clusters' first page of 50 as the fleet part
// times it: the use case and the page's JSON. Its allocations and a CPU
// profile (-cpuprofile) are the in-process cost, which load does not move.
func BenchmarkListPage(b *testing.B) {
	st, org := oneOrgFleet(b, 51)
	svc := &cluster.Service{Deps: &usecase.Deps{Store: st}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		page, err := svc.List(ctx, auth.Principal{OrgID: org}, cluster.ListQuery{Limit: 50})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Clusters) != 50 {
			b.Fatalf("a page of %d clusters, want 50", len(page.Clusters))
		}
		if _, err := json.Marshal(page); err != nil {
			b.Fatal(err)
		}
	}
}
