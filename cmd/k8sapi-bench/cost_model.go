package main

import (
	"strconv"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

// The cost table (issue 42 item 3): what one cluster of 3 control-plane
// nodes and a pool of 3 workers costs a month at rest, and what one
// founding costs, from calls counted on the local stack, each kind's
// count multiplied by its rate from the code's own constants and by AWS
// list prices.

// month is the billing month the table is for: 30 days.
const month = 30 * 24 * time.Hour

// fleetShare is the fleet whose reconciler a cluster pays its share of:
// the sweep is one per fleet, not one per cluster.
const fleetShare = 10000

// prices are AWS list prices, us-east-1, written from memory (not
// fetched): the table says so and gives their date.
type prices struct {
	date                  string
	lambdaGBSecond        float64 // arm64
	lambdaRequest         float64
	httpAPIRequest        float64 // API Gateway HTTP API, first 300 million a month
	kmsRequest            float64 // symmetric requests
	s3Put                 float64 // PUT, COPY, POST, LIST
	s3GBMonth             float64 // Standard, first 50 TB
	logsIngestedGB        float64 // CloudWatch Logs, standard class
	gib                   float64
	architecture, apiKind string
}

var listPrices = prices{
	date:           "2025-06",
	lambdaGBSecond: 0.0000133334, lambdaRequest: 0.20 / 1e6,
	httpAPIRequest: 1.00 / 1e6,
	kmsRequest:     0.03 / 10000,
	s3Put:          0.005 / 1000, s3GBMonth: 0.023,
	logsIngestedGB: 0.50,
	gib:            1 << 30,
	architecture:   "arm64", apiKind: "HTTP API",
}

// calls are n calls of one kind and what they cost in total.
type calls struct {
	n                          int
	billedMs, kms, rows, logsB int64
	memoryMB                   int
	http                       bool // through API Gateway
}

func (c *calls) add(o calls) {
	c.n += o.n
	c.billedMs += o.billedMs
	c.kms += o.kms
	c.rows += o.rows
	c.logsB += o.logsB
	c.memoryMB = max(c.memoryMB, o.memoryMB)
	c.http = c.http || o.http
}

// usage is a count of billed things: per call, per month or per founding.
type usage struct {
	invocations, gbSeconds, kms, rows, logsB, apiRequests float64
}

// scaled is c's mean call times n calls.
func (c calls) scaled(n float64) usage {
	if c.n == 0 {
		return usage{}
	}
	per := n / float64(c.n)
	u := usage{invocations: n, kms: float64(c.kms) * per, rows: float64(c.rows) * per, logsB: float64(c.logsB) * per,
		gbSeconds: float64(c.billedMs) / 1000 * float64(c.memoryMB) / 1024 * per}
	if c.http {
		u.apiRequests = n
	}
	return u
}

func (u usage) plus(o usage) usage {
	return usage{u.invocations + o.invocations, u.gbSeconds + o.gbSeconds, u.kms + o.kms, u.rows + o.rows, u.logsB + o.logsB, u.apiRequests + o.apiRequests}
}

// dollars is what u costs at p (the database is left out: a note of rows).
func (u usage) dollars(p prices) float64 {
	return u.invocations*p.lambdaRequest + u.gbSeconds*p.lambdaGBSecond + u.apiRequests*p.httpAPIRequest +
		u.kms*p.kmsRequest + u.logsB/p.gib*p.logsIngestedGB
}

// rate is one kind of call a cluster at rest makes: which nodes make it
// (a count, or 1 for the cluster), how often each, and a fleet-wide call
// divided among fleetShare clusters.
type rate struct {
	what   string
	route  string // the access-log route; "" for the reconciler
	makers int
	every  time.Duration
	share  int
}

// perMonth is how many calls of r one cluster makes (or pays its share of) a month.
func (r rate) perMonth() float64 {
	n := float64(r.makers) * float64(month) / float64(r.every)
	if r.share > 1 {
		n /= float64(r.share)
	}
	return n
}

// atRest are a 3 + 3 cluster's calls at rest, with their rates from the
// bundle's timers, the cluster's snapshot schedule and the reconciler's
// schedule (template.yaml).
func atRest(reconcilerEvery time.Duration) []rate {
	const cp, workers = 3, 3
	return []rate{
		{"health report, control plane", "POST " + bundle.HealthPathTemplate, cp, bundle.HealthEvery, 1},
		{"health report, worker", "POST " + bundle.WorkerHealthPathTemplate, workers, bundle.HealthEvery, 1},
		{"renewal, control plane", "POST " + bundle.RenewPathTemplate, cp, bundle.RenewEvery, 1},
		{"renewal, worker", "POST " + bundle.WorkerRenewPathTemplate, workers, bundle.RenewEvery, 1},
		{"snapshot ask (every control-plane node)", "GET " + bundle.SnapshotPathTemplate, cp, bundle.SnapshotAskEvery, 1},
		{"snapshot report", "POST " + bundle.SnapshotPathTemplate, 1, clusterspec.DefaultSnapshotInterval, 1},
		{"etcd CRL ask", "GET " + bundle.EtcdCRLPathTemplate, cp, bundle.EtcdCRLAskEvery, 1},
		{"etcd membership ask", "GET " + bundle.EtcdMembershipPathTemplate, cp, bundle.EtcdMembershipAskEvery, 1},
		{"upgrade addons ask", "GET " + bundle.AddonsPathTemplate, cp, bundle.AddonsAskEvery, 1},
		{"reconciler run (share of " + strconv.Itoa(fleetShare) + " clusters)", "", 1, reconcilerEvery, fleetShare},
	}
}

// snapshotStorage is a cluster's snapshots in S3 a month: PUTs, and the
// objects kept at steady state under the bucket's retention.
type snapshotStorage struct {
	puts, objectsKept, gbMonth float64
}

func storageOf(objectBytes float64, retentionDays int) snapshotStorage {
	puts := float64(month) / float64(clusterspec.DefaultSnapshotInterval)
	kept := float64(time.Duration(retentionDays)*24*time.Hour) / float64(clusterspec.DefaultSnapshotInterval)
	return snapshotStorage{puts: puts, objectsKept: kept, gbMonth: kept * objectBytes / listPrices.gib}
}

func (s snapshotStorage) dollars(p prices) float64 { return s.puts*p.s3Put + s.gbMonth*p.s3GBMonth }
