package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/store"
)

// dueAfter is when, after t0, the oldest 1% of the fleet's newest
// snapshots are an hour old, and the leases the due operations were
// begun under have run out.
const dueAfter = 36 * time.Second

// otherFlushes is how long an idle backend may hold its table statistics
// before it flushes them (PostgreSQL 15's PGSTAT_IDLE_INTERVAL is 10 s),
// with a second to spare.
const otherFlushes = 11 * time.Second

// measureDue makes 1% of the fleet's clusters have an operation due (a
// third each a deletion, a pool scale and a control-plane replacement,
// begun through the store as their routes begin them, whose driver then
// died), runs one sweep dueAfter past t0, when another 1% are due a
// snapshot, and explains its statements.
func (run *fleetRun) measureDue(ctx context.Context, f *fleet, rig *sweepRig, admin *pgxpool.Pool) error {
	n, err := f.makeDue(ctx, len(f.clusters)/100)
	if err != nil {
		return err
	}
	run.dueOps = n
	// The seeders' backends flush their statistics when idle for
	// otherFlushes, not on demand: a flush of makeDue's reads inside the
	// sweep's window was counted as the sweep's (116,924 rows one run).
	time.Sleep(otherFlushes)
	if run.due, err = rig.measure(ctx, len(f.clusters), f.t0.Add(dueAfter)); err != nil {
		return err
	}
	run.duePlans, err = explain(ctx, admin, run.due.stmts)
	return err
}

// makeDue begins n operations on clusters that are not due a snapshot
// (so the two kinds of due add up), leases running out before
// t0+dueAfter, and returns how many it began.
func (f *fleet) makeDue(ctx context.Context, n int) (int, error) {
	lease := store.Lease{Owner: "k8sapi-bench-died", Until: f.t0.Add(dueAfter / 2)}
	begin := []func(seeded) error{
		func(c seeded) error { return f.st.BeginDeleting(ctx, c.org, c.id, lease, f.t0) },
		func(c seeded) error {
			_, err := f.st.BeginPoolOperation(ctx, store.PoolChange{OrgID: c.org,
				Pool:  store.Pool{ID: c.poolID, ClusterID: c.id, Name: "workers", Count: fleetWorkers + 1},
				State: store.PoolScaling, From: []string{store.PoolActive}, Lease: lease, Now: f.t0,
				Name: func(o int) string { return fmt.Sprintf("fleet-%d-w-%d", c.index, o) }})
			return err
		},
		func(c seeded) error {
			nodes, err := f.st.ClusterNodes(ctx, c.id)
			if err != nil {
				return err
			}
			_, err = f.st.BeginReplacement(ctx, store.ReplacementStart{OrgID: c.org, Old: nodes[fleetControlPlanes-1],
				Name: func(o int) string { return fmt.Sprintf("fleet-%d-cp-%d", c.index, o) }})
			return err
		},
	}
	made := 0
	for _, c := range f.clusters {
		if made == n {
			break
		}
		if fleetOffset(c.index, f.size) > fleetSpread-2*dueAfter {
			continue // due a snapshot at t0+dueAfter
		}
		if err := begin[made%len(begin)](c); err != nil {
			return made, fmt.Errorf("making cluster %d due: %w", c.id, err)
		}
		made++
	}
	return made, nil
}
