package main

import (
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

// The cost table's block in the report's kept section, like the bring-up's.
const (
	costBegin = "<!-- bench-cost: written by make bench-cost -->"
	costEnd   = "<!-- /bench-cost -->"
)

// costRow is one line of the table: a kind of call, its calls a month
// (or per founding) and what they use.
type costRow struct {
	what    string
	counted int // calls the figures are the mean of
	calls   float64
	u       usage
}

// monthly is the at-rest rows: each kind's counted mean call times its rate.
func (run *costRun) monthly() []costRow {
	routes := run.logs.byRoute("", run.memory)
	var rows []costRow
	for _, r := range atRest(run.reconcilerEvery) {
		c := run.logs.reconciler("rest", run.memory["ReconcilerFunction"])
		if r.route != "" {
			c = calls{}
			if rc := routes[r.route]; rc != nil {
				c = *rc
			}
		}
		if c.n == 0 {
			log.Printf("cost: no %s was counted: its row is empty", r.what)
		}
		rows = append(rows, costRow{r.what, c.n, r.perMonth(), c.scaled(r.perMonth())})
	}
	return rows
}

// foundingRows are one founding's calls: every request of the founding
// phase but the node's calls at rest, and the reconciler's runs then.
func (run *costRun) foundingRows() []costRow {
	rest := map[string]bool{}
	for _, r := range atRest(run.reconcilerEvery) {
		rest[r.route] = true
	}
	for _, poll := range pollRoutes {
		rest[poll] = true
	}
	var rows []costRow
	routes := run.logs.byRoute("founding", run.memory)
	for _, route := range slices.Sorted(mapKeys(routes)) {
		if c := routes[route]; !rest[route] {
			rows = append(rows, costRow{route, c.n, float64(c.n), c.scaled(float64(c.n))})
		}
	}
	rc := run.logs.reconciler("founding", run.memory["ReconcilerFunction"])
	return append(rows, costRow{"reconciler runs meanwhile", rc.n, float64(rc.n), rc.scaled(float64(rc.n))})
}

// pollRoutes are the benchmark's own polls for ready, not the founding's:
// how often a user polls is the user's.
var pollRoutes = []string{"GET /clusters/{id}", "GET /clusters/{id}/node-pools/{pool}"}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func total(rows []costRow) usage {
	var u usage
	for _, r := range rows {
		u = u.plus(r.u)
	}
	return u
}

// bytesPerRow is what a row written at rest grew the tables by (pages,
// indexes and TOAST included), 0 when they did not grow.
func (run *costRun) bytesPerRow() float64 {
	if run.atRest.rows <= 0 || run.atRest.bytes <= 0 {
		return 0
	}
	return float64(run.atRest.bytes) / float64(run.atRest.rows)
}

func (run *costRun) storage() snapshotStorage {
	per := 0.0
	if run.s3Objects > 0 {
		per = float64(run.s3Bytes) / float64(run.s3Objects)
	}
	return storageOf(per, run.retentionDays)
}

// monthlyDollars is the at-rest month: the calls and the snapshots kept.
func (run *costRun) monthlyDollars() float64 {
	return total(run.monthly()).dollars(listPrices) + run.storage().dollars(listPrices)
}

func (run *costRun) block() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s\n### Cost per cluster (3 control-plane nodes + a pool of 3 workers)\n\n", costBegin)
	p("Written by `make bench-cost` on %s in %s: counted on a local stack of the real function binaries (stand-in VMs), each kind of call's mean over the calls counted times its rate from the code's constants (health every %s per node, renewal every %s per node, snapshot ask every %s per control-plane node, one snapshot every %s kept %d days, CRL, membership and addons asks every %s, %s and %s per control-plane node, the reconciler every %s), a month of 30 days. ",
		run.started.UTC().Format(minute), run.took.Round(time.Second), bundle.HealthEvery, bundle.RenewEvery, bundle.SnapshotAskEvery,
		clusterspec.DefaultSnapshotInterval, run.retentionDays, bundle.EtcdCRLAskEvery, bundle.EtcdMembershipAskEvery, bundle.AddonsAskEvery, run.reconcilerEvery)
	p("Billed duration: each invocation's handler time at the Runtime API rounded up to 1 ms, times the function's memory (template.yaml). Log bytes: every line the functions wrote, with Lambda's START/END/REPORT lines. KMS and rows written: the access-log line's counts (`internal/metrics`).\n\n")
	p("List prices as of %s, us-east-1, from memory, not fetched: Lambda %s $%.10f per GB-second and $%.2f per million requests; API Gateway %s $%.2f per million; KMS $%.2f per 10,000 requests; S3 Standard $%.3f per 1,000 PUTs and $%.3f per GB-month; CloudWatch Logs ingestion $%.2f per GB. The database (Aurora/RDS) is left as rows and bytes, not a price.\n\n",
		listPrices.date, listPrices.architecture, listPrices.lambdaGBSecond, listPrices.lambdaRequest*1e6, listPrices.apiKind, listPrices.httpAPIRequest*1e6,
		listPrices.kmsRequest*1e4, listPrices.s3Put*1e3, listPrices.s3GBMonth, listPrices.logsIngestedGB)
	rows := run.monthly()
	p("**A month at rest:**\n\n")
	costTable(p, rows)
	s := run.storage()
	p("| etcd snapshots in S3 | %d | %.0f PUTs | %.0f objects kept, %.6f GB-month | | | | $%.4f |\n", run.s3Objects, s.puts, s.objectsKept, s.gbMonth, s.dollars(listPrices))
	p("| **total** | | | | | | | **$%.4f** |\n\n", run.monthlyDollars())
	p("Counted: the calls each row's figures are the mean of. Every HTTP call is also one API Gateway request (in the $). The reconciler's run was counted on a fleet of one cluster; at %d clusters its sweep reads more (the fleet section's sweep with nothing due), which this share leaves out.\n\n", fleetShare)
	p("Database at rest: %.0f rows written a month; at the rest's growth of %.0f bytes per row written (%d rows, %d bytes of tables, indexes and TOAST counted by pg_stat_user_tables and pg_total_relation_size), %.1f MiB a month.\n\n",
		total(rows).rows, run.bytesPerRow(), run.atRest.rows, run.atRest.bytes, total(rows).rows*run.bytesPerRow()/mib)
	found := run.foundingRows()
	p("**One founding** (POST /clusters with 3 nodes and POST of the pool to every node ready):\n\n")
	costTable(p, found)
	p("| **total** | | | | | | | **$%.4f** |\n\n", total(found).dollars(listPrices))
	p("Left out: the benchmark's own polls for ready (%s). A fetch or status report counted more often than its nodes is a stand-in's retry while its node was not yet to be served.\n\n", strings.Join(pollRoutes, ", "))
	p("Database per founding: %d rows written, %d bytes of tables grown (pg_stat_user_tables, pg_total_relation_size: the compute simulator writes its VMs into the same database, so more than the requests' own rows above).\n\n", run.founding.rows, run.founding.bytes)
	p("Not counted: the snapshot's size is the stand-in's (%d objects, %d bytes in the bucket; a real etcd's is MBs: each MiB per snapshot kept adds $%.4f a month), Lambda's init duration of a cold environment, the KMS key's own $1 a month (one per stack, not per cluster), S3's own KMS requests (a bucket key), CloudWatch Logs storage.\n",
		run.s3Objects, run.s3Bytes, storageOf(mib, run.retentionDays).dollars(listPrices)-storageOf(0, run.retentionDays).dollars(listPrices))
	return b.String() + costEnd
}

func costTable(p printf, rows []costRow) {
	p("| calls | counted | invocations | Lambda GB-s | KMS requests | DB rows written | log bytes | $ |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %s | %d | %.1f | %.3f | %.1f | %.0f | %.0f | $%.4f |\n", r.what, r.counted, r.calls, r.u.gbSeconds, r.u.kms, r.u.rows, r.u.logsB, r.u.dollars(listPrices))
	}
}

// writeCostOnly runs the cost part and puts its block into the report.
func writeCostOnly(o options, r *report) error {
	run, err := runCost()
	if err != nil {
		return err
	}
	r.cost = run
	if err := writeBlock(o.out, run.block(), costBegin, costEnd); err != nil {
		return err
	}
	fmt.Print(r.closingLines())
	return nil
}
