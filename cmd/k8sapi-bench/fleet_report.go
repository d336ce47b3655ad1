package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// fleetHeading starts the fleet's section of the report.
const fleetHeading = "## 5. A fleet: 10,000 clusters"

// Goals of the fleet (issue 42, and what a fleet's operators would hold a
// control plane to where it is silent).
const (
	idleRowsGoal    = 100 // rows a sweep with nothing due may read, whatever the fleet
	rowsPerDueGoal  = 25  // rows a sweep may read per operation or snapshot due
	listP99Goal     = 50 * time.Millisecond
	getP99Goal      = 25 * time.Millisecond
	vmCallsP99Goal  = 15 * time.Millisecond // a fetch's or report's store calls: a share of its route's 50 ms p99
	fleetScansLimit = 0
)

// fleetBudgets are the fleet's goals, measured.
func (f *fleetRun) budgets() []budget {
	if f == nil || f.idleBig.clusters == 0 {
		return nil
	}
	s, b := f.idleSmall, f.idleBig
	bs := []budget{
		{fmt.Sprintf("fleet: sweep with nothing due, rows read at %d vs %d clusters", s.clusters, b.clusters),
			fmt.Sprintf("%d vs %d", s.reads.rows, b.reads.rows), fmt.Sprintf("≤ %d, not growing", idleRowsGoal),
			b.reads.rows <= idleRowsGoal && b.reads.rows <= 2*s.reads.rows+10},
		{fmt.Sprintf("fleet: sweep with nothing due, time at %d vs %d clusters (median of %d)", s.clusters, b.clusters, f.repeats),
			fmt.Sprintf("%s vs %s (%.1f×)", ms(s.took), ms(b.took), ratio(b.took, s.took)), "≤ 2×", b.took <= 2*s.took+time.Millisecond},
	}
	if due := f.dueItems(); due > 0 {
		per := float64(f.due.reads.rows-b.reads.rows) / float64(due)
		bs = append(bs, budget{fmt.Sprintf("fleet: sweep with 1%% due (%d operations, %d snapshots), rows read per item due", f.due.claimed, f.due.schedule.Scheduled),
			fmt.Sprintf("%.1f (%d rows, %s)", per, f.due.reads.rows, ms(f.due.took)), fmt.Sprintf("≤ %d", rowsPerDueGoal), per <= rowsPerDueGoal})
	}
	for _, t := range f.reads {
		goal := vmCallsP99Goal
		switch {
		case strings.HasPrefix(t.what, "GET /clusters/"):
			goal = getP99Goal
		case strings.HasPrefix(t.what, "GET /clusters"):
			goal = listP99Goal
		}
		bs = append(bs, budget{fmt.Sprintf("fleet: %s at %d clusters: p99", t.what, b.clusters), ms(t.pct(.99)), "≤ " + ms(goal), t.pct(.99) <= goal})
	}
	wide := f.fleetWidePlans()
	bs = append(bs, budget{"fleet: statements whose plan grows with the fleet (a seq scan of ≥ 10% or any scan of ≥ 50% of its clusters' count)", fmt.Sprintf("%d %s", len(wide), strings.Join(wide, ", ")),
		fmt.Sprint(fleetScansLimit), len(wide) <= fleetScansLimit})
	return bs
}

// dueItems is what the due sweep had to do: operations and snapshots.
func (f *fleetRun) dueItems() int { return f.due.claimed + f.due.schedule.Scheduled }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fleetWidePlans names the statements, of the sweeps and the reads, that
// scan at least a tenth of the fleet.
func (f *fleetRun) fleetWidePlans() []string {
	var out []string
	seen := map[string]bool{}
	all := append(append([]plan{}, f.plans...), f.duePlans...)
	for _, ps := range f.readPlans {
		all = append(all, ps...)
	}
	for _, p := range all {
		if p.fleetWide(f.big) && !seen[p.caller] {
			seen[p.caller] = true
			out = append(out, p.caller)
		}
	}
	return out
}

// section is the fleet's part of BENCHMARKS.md.
func (f *fleetRun) section(p printf) {
	if f == nil || f.idleBig.clusters == 0 {
		return
	}
	p("\n%s\n\n", fleetHeading)
	f.body(p)
}

// body is the section under its heading.
func (f *fleetRun) body(p printf) {
	p("A fresh database (`testenv.FreshDatabase`: every migration, as the tests apply them) seeded through the store's own statements, as founding, pools, fetches, the schedule and the audit trail write them: %d clusters of %d control-plane nodes and a pool of %d workers across %d orgs, %d hourly snapshots each (the newest spread over the last hour, those under a minute old still pending), a bundle fetch and a ready report per node, %d audit events per cluster; every certificate is one real ECDSA certificate (its serial recorded, its expiry read by the views), every sealed key filler of its size. ",
		f.big, fleetControlPlanes, fleetWorkers, fleetOrgs, fleetSnapshots, fleetAuditEvents)
	p("Seeded in %s (the first %d in %s), %d concurrent seeders; then `VACUUM ANALYZE`, as autovacuum would. Rows: %s.\n\n",
		(f.seedSmall + f.seedBig).Round(time.Second), f.small, f.seedSmall.Round(time.Second), seedWorkers, f.rowCounts())
	p("| measure | result | goal | |\n|---|---|---|---|\n")
	for _, x := range f.budgets() {
		p("| %s | %s | %s | %s |\n", x.what, x.measured, x.limit, passFail(x.pass))
	}
	f.sweepSection(p)
	f.readsSection(p)
}

func (f *fleetRun) rowCounts() string {
	var parts []string
	for _, t := range fleetTables {
		parts = append(parts, fmt.Sprintf("%s %d", t, f.rowsByTable[t]))
	}
	return strings.Join(parts, ", ")
}

func (f *fleetRun) sweepSection(p printf) {
	p("\n### The reconciler's sweep\n\n")
	p("What the ReconcilerFunction asks of the store in one run: the one claim of every kind until none is due (`ClaimDue`), then the etcd snapshot schedule (`etcdsnapshot.Schedule.Run`). A claimed operation is not handled here: its handling is its own work. On one connection, whose backend's `pg_stat_user_tables` are read before and after (rows: heap rows read by sequential and index scans; blocks: heap, index and TOAST blocks touched). 1%% due: %d operations begun through the store (a deletion, a pool scale-up, a control-plane replacement in turn) whose lease ran out, and the clusters whose newest snapshot turned an hour old %s after the idle sweeps' clock.\n\n",
		f.dueOps, dueAfter)
	p("| sweep | time | statements | rows read | seq scans of fleet tables | blocks | claimed | snapshots asked for |\n|---|---|---|---|---|---|---|---|\n")
	row := func(what string, s sweepResult) {
		p("| %s | %s | %d | %d | %d | %d | %d | %d |\n", what, ms(s.took), s.queries, s.reads.rows, s.reads.seqScans, s.reads.blocks, s.claimed, s.schedule.Scheduled)
	}
	row(fmt.Sprintf("nothing due, %d clusters (median of %d)", f.small, f.repeats), f.idleSmall)
	row(fmt.Sprintf("nothing due, %d clusters (median of %d)", f.big, f.repeats), f.idleBig)
	row(fmt.Sprintf("1%% due, %d clusters (one run)", f.big), f.due)
	p("\nEach statement of the idle sweep at %d clusters, `EXPLAIN (ANALYZE, BUFFERS)` once more in a transaction rolled back:\n\n", f.big)
	planTable(p, f.plans)
	p("\nAnd of the sweep with 1%% due (explained after it ran, so a claim finds what is left):\n\n")
	planTable(p, f.duePlans)
}

func planTable(p printf, plans []plan) {
	p("| store call | scans (rows each read) | rows read | buffers | execution |\n|---|---|---|---|---|\n")
	for _, pl := range plans {
		var scans []string
		for _, s := range pl.scans {
			scans = append(scans, s.String())
		}
		p("| %s | %s | %.0f | %d | %.3f ms |\n", pl.caller, strings.Join(scans, "; "), pl.rowsRead, pl.buffers, pl.execMS)
	}
}

func (f *fleetRun) readsSection(p printf) {
	p("\n### Reads and a VM's calls at %d clusters\n\n", f.big)
	p("In-process against the seeded database on a pool shaped as a function's (2 connections): `GET /clusters` and `GET /clusters/{id}` are the use cases (`cluster.Service.List`, `.Get`) with the page's JSON encoding; a bundle fetch and a status report are their store calls (proofs and call count, topology, the fetch's record; proofs, the guarded phase write), as a later fetch and a repeated ready report of a Ready node make them: the render's CPU is section 1's, the gateway's hop section 2's. %d requests each on random clusters (%d per org).\n\n",
		f.samples, f.big/fleetOrgs)
	p("| request | p50 | p99 | max | statements |\n|---|---|---|---|---|\n")
	for _, t := range f.reads {
		p("| %s | %s | %s | %s | %d |\n", t.what, ms(t.pct(.5)), ms(t.pct(.99)), ms(t.pct(1)), t.queries)
	}
	p("\nTheir statements, explained (one request each):\n\n")
	for i, t := range f.reads {
		p("%s:\n\n", t.what)
		planTable(p, f.readPlans[i])
		p("\n")
	}
}

// closingLines are the figures a reader compares run to run (issue 42's
// "done when"); a figure this run did not measure says so.
func (r *report) closingLines() string {
	var b strings.Builder
	f := r.fleet
	if f != nil && f.idleBig.clusters > 0 {
		fmt.Fprintf(&b, "fleet: sweep with nothing due, %d vs %d clusters: %.1f ms vs %.1f ms (%d vs %d rows read)\n",
			f.small, f.big, msF(f.idleSmall.took), msF(f.idleBig.took), f.idleSmall.reads.rows, f.idleBig.reads.rows)
		if len(f.reads) > 0 {
			fmt.Fprintf(&b, "fleet: GET /clusters p99 at %d clusters: %.1f ms\n", f.big, msF(f.reads[0].pct(.99)))
		}
	} else {
		b.WriteString("fleet: sweep with nothing due: not measured this run\n")
	}
	b.WriteString(r.storm.closingLine())
	if k := r.fetchKMS(); k.nWarm > 0 {
		fmt.Fprintf(&b, "fleet: KMS calls per warm fetch: %d\n", k.warm)
	} else {
		b.WriteString("fleet: KMS calls per warm fetch: not measured this run (the load part did not run)\n")
	}
	if r.cost != nil {
		fmt.Fprintf(&b, "fleet: cost of a 3+3 cluster at rest: $%.2f per month\n", r.cost.monthlyDollars())
	} else {
		b.WriteString("fleet: cost of a 3+3 cluster at rest: not measured this run (make bench-cost)\n")
	}
	return b.String()
}

func msF(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeFleetOnly runs the fleet alone and puts its section into the
// existing report in place of the old one (or before the findings), so
// the rest of the report stays as its last full run wrote it.
func writeFleetOnly(o options, r *report) error {
	if err := runFleet(o, r); err != nil {
		return err
	}
	r.elapsed = time.Since(r.started)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n%s\n\n", fleetHeading)
	p("Written by `make bench-fleet` on %s in %s. Machine: %s, %s cores, %s, %s. Load average (1, 5, 15 min) at start %s, at end %s.\n",
		r.started.UTC().Format("2006-01-02"), r.elapsed.Round(time.Second), r.machine.cpu, r.machine.cores, r.machine.osArch,
		r.machine.goVersion, r.machine.loadStart, loadavg())
	p("\n")
	r.fleet.body(p)
	old, err := os.ReadFile(o.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // no report yet: the section is the report
		return err
	}
	fmt.Print(r.table())
	fmt.Print(r.closingLines())
	return os.WriteFile(o.out, []byte(spliceSection(string(old), fleetHeading, b.String())), 0o644)
}

// spliceSection replaces the section of doc that starts with heading by
// section, or puts section before the findings (else at the end).
func spliceSection(doc, heading, section string) string {
	if i := strings.Index(doc, "\n"+heading); i >= 0 {
		rest := doc[i+1+len(heading):]
		end := len(doc)
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = i + 1 + len(heading) + j
		}
		return doc[:i] + section + doc[end:]
	}
	if i := strings.Index(doc, "\n## Findings"); i >= 0 {
		return doc[:i] + section + doc[i:]
	}
	return strings.TrimRight(doc, "\n") + "\n" + section
}
