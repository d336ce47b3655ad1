package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

// fleetRun is what the fleet part measured.
type fleetRun struct {
	small, big       int
	seedSmall        time.Duration
	seedBig          time.Duration
	idleSmall        sweepResult // nothing due, the small fleet
	idleBig          sweepResult // nothing due, the whole fleet
	idleRuns         []time.Duration
	due              sweepResult // 1% due, the whole fleet
	dueOps           int         // operations made due for it
	plans            []plan      // the idle sweep's statements, explained at the whole fleet
	duePlans         []plan
	reads            []*timings
	readPlans        [][]plan // reads[i]'s statements, explained
	rowsByTable      map[string]int64
	analyzeTook      time.Duration
	samples, repeats int
}

// sweepRepeats is how many idle sweeps each figure is the median of.
const sweepRepeats = 5

// runFleet seeds a fresh database (testenv's, migrations as the tests
// apply them) with o.fleetSmall clusters, measures a sweep with nothing
// due, grows the fleet to o.fleet and measures the sweep again, the reads,
// and a sweep with 1% due.
func runFleet(o options, r *report) error {
	ctx := context.Background()
	dsn, drop, err := testenv.FreshDatabase(ctx, "k8sapi_bench_fleet")
	if err != nil {
		return err
	}
	defer func() {
		if err := drop(context.Background()); err != nil {
			log.Printf("fleet: dropping the database: %v", err)
		}
	}()
	run := &fleetRun{small: o.fleetSmall, big: o.fleet, samples: o.fleetSamples, repeats: sweepRepeats}
	r.fleet = run
	admin, err := store.OpenPool(ctx, dsn, store.PoolSettings{MaxConns: 2, StatementTimeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	defer admin.Close()
	seedPool, err := store.OpenPool(ctx, asyncCommit(dsn), store.PoolSettings{MaxConns: seedWorkers, StatementTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer seedPool.Close()
	f := &fleet{st: store.New(seedPool), t0: time.Now(), size: o.fleet}
	rig, err := newSweepRig(ctx, dsn, admin)
	if err != nil {
		return err
	}
	defer rig.pool.Close()
	return run.measureAll(ctx, f, rig, admin, dsn)
}

// measureAll is runFleet's sequence once the database and pools exist.
func (run *fleetRun) measureAll(ctx context.Context, f *fleet, rig *sweepRig, admin *pgxpool.Pool, dsn string) error {
	var err error
	if run.seedSmall, err = run.grow(ctx, f, admin, run.small); err != nil {
		return err
	}
	if run.idleSmall, _, err = idleSweeps(ctx, rig, run.small, f.t0); err != nil {
		return err
	}
	if run.seedBig, err = run.grow(ctx, f, admin, run.big); err != nil {
		return err
	}
	if run.idleBig, run.idleRuns, err = idleSweeps(ctx, rig, run.big, f.t0); err != nil {
		return err
	}
	if run.plans, err = explain(ctx, admin, run.idleBig.stmts); err != nil {
		return err
	}
	if err := run.measureReads(ctx, f, admin, dsn); err != nil {
		return err
	}
	if run.rowsByTable, err = tableRows(ctx, admin); err != nil {
		return err
	}
	return run.measureDue(ctx, f, rig, admin)
}

// asyncCommit is dsn with synchronous_commit off for its sessions: the
// seed's tens of thousands of one-statement transactions then wait for no
// WAL flush each (a crash would lose only the benchmark's seed). The
// measured sessions keep the server's setting.
func asyncCommit(dsn string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "synchronous_commit=off"
}

// grow seeds the fleet up to n clusters, then vacuums and analyzes it as
// autovacuum would after that many inserts (its visibility map lets index-only
// scans skip the heap; the benchmark does not wait for autovacuum).
func (run *fleetRun) grow(ctx context.Context, f *fleet, admin *pgxpool.Pool, n int) (time.Duration, error) {
	log.Printf("fleet: seeding %d clusters ...", n-len(f.clusters))
	took, err := f.seed(ctx, n)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := admin.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		return 0, err
	}
	run.analyzeTook = time.Since(start)
	log.Printf("fleet: %d clusters seeded in %s (analyze %s)", n, took.Round(100*time.Millisecond), run.analyzeTook.Round(10*time.Millisecond))
	return took, nil
}

// idleSweeps runs sweepRepeats sweeps at t0, when nothing is due, and
// returns the one of median time and every run's time.
func idleSweeps(ctx context.Context, rig *sweepRig, n int, t0 time.Time) (sweepResult, []time.Duration, error) {
	var runs []sweepResult
	for range sweepRepeats {
		s, err := rig.measure(ctx, n, t0)
		if err != nil {
			return s, nil, err
		}
		if s.claimed != 0 || s.schedule.Scheduled != 0 {
			return s, nil, fmt.Errorf("a sweep at t0 found %d operations and %d snapshots due: the seed is wrong", s.claimed, s.schedule.Scheduled)
		}
		runs = append(runs, s)
	}
	slices.SortFunc(runs, func(a, b sweepResult) int { return int(a.took - b.took) })
	var took []time.Duration
	for _, s := range runs {
		took = append(took, s.took)
	}
	return runs[len(runs)/2], took, nil
}

// measureReads times the reads on a pool shaped as a function's (2
// connections) and explains one request of each.
func (run *fleetRun) measureReads(ctx context.Context, f *fleet, admin *pgxpool.Pool, dsn string) error {
	rec := &recorder{}
	pool, err := store.OpenPool(ctx, dsn, store.PoolSettings{Tracer: rec})
	if err != nil {
		return err
	}
	defer pool.Close()
	rd := &fleetReads{f: f, st: store.New(pool), rec: rec, rnd: rand.New(rand.NewPCG(42, 42)), platform: admin, tokens: map[int64]string{}}
	if run.reads, err = rd.all(ctx, run.samples); err != nil {
		return err
	}
	for _, t := range run.reads {
		p, err := explain(ctx, admin, t.stmts)
		if err != nil {
			return err
		}
		run.readPlans = append(run.readPlans, p)
	}
	return nil
}

// tableRows counts the seeded rows of each fleet table.
func tableRows(ctx context.Context, admin *pgxpool.Pool) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range fleetTables {
		var n int64
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, nil
}
