package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// Two health reports counted, 10 ms and 20 ms billed at 512 MB with one KMS
// call, 4 rows and 300 log bytes between them, scaled to a month of one
// node's reports: each figure is the mean call times the rate.
func TestScaledIsTheMeanCallTimesTheRate(t *testing.T) {
	c := calls{n: 2, billedMs: 30, kms: 1, rows: 4, logsB: 300, memoryMB: 512, http: true}
	r := rate{makers: 1, every: bundle.HealthEvery, share: 1}
	n := r.perMonth()
	near(t, "calls a month", n, float64(month/bundle.HealthEvery))
	u := c.scaled(n)
	near(t, "GB-seconds", u.gbSeconds, 0.015*0.5*n)
	near(t, "KMS", u.kms, 0.5*n)
	near(t, "rows", u.rows, 2*n)
	near(t, "log bytes", u.logsB, 150*n)
	near(t, "API requests", u.apiRequests, n)
}

// The price of a usage is each count times its list price; the reconciler
// (no API Gateway) pays no request of it.
func TestDollarsAreCountsTimesPrices(t *testing.T) {
	p := prices{lambdaGBSecond: 2, lambdaRequest: 3, httpAPIRequest: 5, kmsRequest: 7, logsIngestedGB: 11, gib: 100}
	u := usage{invocations: 1, gbSeconds: 1, kms: 1, logsB: 100, apiRequests: 1, rows: 1000}
	near(t, "dollars", u.dollars(p), 2+3+5+7+11)
	recon := calls{n: 1, billedMs: 1000, memoryMB: 1024}.scaled(1)
	near(t, "reconciler dollars", recon.dollars(p), 2+3)
}

// A fleet-wide call is shared among the fleet; a node's is multiplied by
// its nodes.
func TestRatesShareTheReconcilerAndCountTheNodes(t *testing.T) {
	rates := atRest(time.Minute)
	byWhat := map[string]rate{}
	for _, r := range rates {
		byWhat[r.what] = r
	}
	near(t, "control-plane health reports", byWhat["health report, control plane"].perMonth(), 3*30*24*120)
	near(t, "reconciler share", rates[len(rates)-1].perMonth(), 30*24*60/float64(fleetShare))
	near(t, "snapshot reports", byWhat["snapshot report"].perMonth(), float64(month/clusterspec.DefaultSnapshotInterval))
}

// Snapshots kept are the retention's worth of the schedule's; storage is
// their bytes, PUTs one per snapshot.
func TestStorageKeepsTheRetentionsSnapshots(t *testing.T) {
	s := storageOf(listPrices.gib, 30)
	perDay := float64(24*time.Hour) / float64(clusterspec.DefaultSnapshotInterval)
	near(t, "objects kept", s.objectsKept, 30*perDay)
	near(t, "GB-month", s.gbMonth, 30*perDay)
	near(t, "PUTs", s.puts, 30*perDay)
}

// The logs of the local stack: a request's REPORT line gives its billed
// duration, its access line its route and counts, every line with its id
// its bytes; the reconciler's by its runs.
func TestCostLogsJoinTheReportAndTheAccessLine(t *testing.T) {
	l := newCostLogs()
	l.setPhase("rest")
	access := `{"msg":"request","request_id":"abc","route":"POST /x","kms_calls":1,"db_rows_written":2}`
	report := "REPORT RequestId: abc\tDuration: 3.20 ms\tBilled Duration: 4 ms\tMemory Size: 512 MB"
	in := "ClustersFunction | " + access + "\nClustersFunction | " + report + "\nReconcilerFunction | " +
		"REPORT RequestId: r1\tDuration: 9.00 ms\tBilled Duration: 9 ms\tMemory Size: 1024 MB\nReconcilerFunction | " +
		`{"msg":"etcd snapshot schedule","kms_calls":0,"db_rows_written":5}` + "\n"
	if _, err := l.Write([]byte(in[:17])); err != nil { // a partial line first
		t.Fatal(err)
	}
	if _, err := l.Write([]byte(in[17:])); err != nil {
		t.Fatal(err)
	}
	c := l.byRoute("rest", map[string]int{"ClustersFunction": 512})["POST /x"]
	if c == nil || c.n != 1 || c.billedMs != 4 || c.kms != 1 || c.rows != 2 || c.logsB != int64(len(access)+len(report)+2) || c.memoryMB != 512 {
		t.Fatalf("route calls = %+v", c)
	}
	r := l.reconciler("rest", 1024)
	if r.n != 1 || r.billedMs != 9 || r.rows != 5 || r.http {
		t.Fatalf("reconciler = %+v", r)
	}
}

func TestParseReportReadsTheBilledDuration(t *testing.T) {
	id, ms, ok := parseReport("REPORT RequestId: x1\tDuration: 0.40 ms\tBilled Duration: 1 ms\tMemory Size: 128 MB")
	if !ok || id != "x1" || ms != 1 {
		t.Fatalf("parseReport = %q %d %v", id, ms, ok)
	}
	if _, _, ok := parseReport(strings.Repeat("x", 10)); ok {
		t.Fatal("a line that is no REPORT parsed")
	}
}
