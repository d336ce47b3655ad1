package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/reconciler"
	"github.com/excloud/k8sapi/internal/store"
)

// sweepResult is one reconciler run's database cost: what the
// ReconcilerFunction's store calls cost at a fleet's size.
type sweepResult struct {
	clusters  int
	took      time.Duration
	claimed   int                         // operations claimed (their handling is their own work, not measured)
	schedule  etcdsnapshot.ScheduleReport // the snapshot schedule's run
	queries   int
	reads     tableReads // from pg_stat_user_tables, the sweep's own backend
	stmts     []statement
	scheduleT time.Duration // the schedule's part of took
}

// sweep is one run of what the ReconcilerFunction asks of the store at
// now: the one claim of every kind (the reconciler claims until none is
// due), then the etcd snapshot schedule. A claimed
// operation is not handled: its handling is that operation's own work
// (remote calls and fenced writes), not the cost of finding it.
func sweep(ctx context.Context, st *store.Store, now time.Time) (sweepResult, error) {
	var r sweepResult
	lease := store.Lease{Owner: "k8sapi-bench-sweep", Until: now.Add(reconciler.DefaultLease)}
	start := time.Now()
	n, err := claimAll(func() error { _, err := st.ClaimDue(ctx, lease, now); return err })
	if err != nil {
		return r, err
	}
	r.claimed = n
	mid := time.Now()
	sched := &etcdsnapshot.Schedule{Store: st, Now: func() time.Time { return now }}
	rep, err := sched.Run(ctx)
	r.schedule, r.took, r.scheduleT = rep, time.Since(start), time.Since(mid)
	return r, err
}

// claimAll claims until nothing is due.
func claimAll(claim func() error) (int, error) {
	for n := 0; ; n++ {
		err := claim()
		if errors.Is(err, store.ErrNotFound) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// sweepRig runs sweeps on a pool of one connection, so the database
// backend that runs them is the one whose table statistics are read.
type sweepRig struct {
	st    *store.Store
	pool  *pgxpool.Pool
	rec   *recorder
	stats *pgxpool.Pool // another connection, reading pg_stat_user_tables
}

func newSweepRig(ctx context.Context, dsn string, stats *pgxpool.Pool) (*sweepRig, error) {
	rec := &recorder{}
	pool, err := store.OpenPool(ctx, dsn, store.PoolSettings{MaxConns: 1, Tracer: rec, StatementTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	return &sweepRig{st: store.New(pool), pool: pool, rec: rec, stats: stats}, nil
}

// measure runs one sweep at now of a fleet of n clusters, with its
// statements counted and the rows its backend read.
func (g *sweepRig) measure(ctx context.Context, n int, now time.Time) (sweepResult, error) {
	before, err := g.readStats(ctx)
	if err != nil {
		return sweepResult{}, err
	}
	g.rec.start()
	r, err := sweep(ctx, g.st, now)
	r.stmts, r.clusters = g.rec.stop(), n
	r.queries = len(r.stmts)
	if err != nil {
		return r, err
	}
	after, err := g.readStats(ctx)
	r.reads = after.minus(before)
	return r, err
}

// tableReads sums pg_stat_user_tables and pg_statio_user_tables over
// k8sapi's tables: heap rows read by sequential and index scans, the
// sequential scans of fleet tables, and the blocks touched.
type tableReads struct {
	rows, seqScans, blocks int64
}

func (a tableReads) minus(b tableReads) tableReads {
	return tableReads{rows: a.rows - b.rows, seqScans: a.seqScans - b.seqScans, blocks: a.blocks - b.blocks}
}

// readStats flushes the sweep backend's pending statistics (it flushes on
// going idle after pg_stat_force_next_flush, before answering), then reads
// them from another session with a fresh statistics snapshot.
func (g *sweepRig) readStats(ctx context.Context) (tableReads, error) {
	var t tableReads
	if _, err := g.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		return t, fmt.Errorf("flushing statistics: %w", err)
	}
	conn, err := g.stats.Acquire(ctx)
	if err != nil {
		return t, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return t, err
	}
	err = conn.QueryRow(ctx, `
		SELECT coalesce(sum(coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0)), 0)::bigint,
		       coalesce(sum(s.seq_scan) FILTER (WHERE s.relname = ANY($1)), 0)::bigint,
		       coalesce(sum(coalesce(io.heap_blks_hit, 0) + coalesce(io.heap_blks_read, 0) + coalesce(io.idx_blks_hit, 0)
		           + coalesce(io.idx_blks_read, 0) + coalesce(io.toast_blks_hit, 0) + coalesce(io.toast_blks_read, 0)), 0)::bigint
		FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid)`, fleetTables).Scan(&t.rows, &t.seqScans, &t.blocks)
	return t, err
}

// fleetTables are the tables that grow with the fleet.
var fleetTables = []string{"kube_clusters", "kube_nodes", "node_identities", "node_pools", "etcd_snapshots",
	"bootstrap_fetches", "audit_events", "node_replacements", "admin_kubeconfigs"}
