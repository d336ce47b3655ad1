package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// timings are one request's latencies and the statements it sent.
type timings struct {
	what    string
	samples []time.Duration
	queries int // per request (the last one's)
	stmts   []statement
}

func (t *timings) pct(p float64) time.Duration {
	if len(t.samples) == 0 {
		return 0
	}
	ds := append([]time.Duration(nil), t.samples...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(p*float64(len(ds))+0.999999) - 1 // nearest rank
	return ds[max(0, min(i, len(ds)-1))]
}

// fleetReads times the API's reads and a VM's calls at the fleet's size:
// each request's use case (or, for the VM routes, its store calls) run
// in-process against the seeded database, n times on random clusters.
type fleetReads struct {
	f        *fleet
	st       *store.Store
	rec      *recorder
	rnd      *rand.Rand
	platform simulator.Execer // where the dev platform's tokens are issued
	tokens   map[int64]string // VM → its bearer token
}

// time runs one request n times (do gets a fresh random cluster each,
// whose VMs hold bearer tokens issued before the clock starts).
func (r *fleetReads) time(ctx context.Context, what string, n int, do func(context.Context, seeded) error) (*timings, error) {
	t := &timings{what: what}
	for range n {
		c := r.f.clusters[r.rnd.IntN(len(r.f.clusters))]
		if err := r.issueTokens(ctx, c); err != nil {
			return t, err
		}
		r.rec.start()
		start := time.Now()
		err := do(ctx, c)
		t.samples = append(t.samples, time.Since(start))
		t.stmts = r.rec.stop()
		if err != nil {
			return t, fmt.Errorf("%s: %w", what, err)
		}
	}
	t.queries = len(t.stmts)
	return t, nil
}

// all times GET /clusters (first page, next page, one page of the org's
// every cluster), GET /clusters/{id}, a bundle fetch's store calls and a
// status report's.
func (r *fleetReads) all(ctx context.Context, n int) ([]*timings, error) {
	svc := &cluster.Service{Deps: &usecase.Deps{Store: r.st}}
	list := func(limit int, next bool) func(context.Context, seeded) error {
		return func(ctx context.Context, c seeded) error {
			org := auth.Principal{OrgID: c.org}
			page, err := svc.List(ctx, org, cluster.ListQuery{Limit: limit})
			if err == nil && next && page.NextCursor != nil {
				page, err = svc.List(ctx, org, cluster.ListQuery{Limit: limit, Cursor: *page.NextCursor})
			}
			if err == nil {
				_, err = json.Marshal(page) // the route writes it
			}
			return err
		}
	}
	get := func(ctx context.Context, c seeded) error {
		v, err := svc.Get(ctx, auth.Principal{OrgID: c.org}, c.id)
		if err == nil {
			_, err = json.Marshal(v)
		}
		return err
	}
	reqs := []struct {
		what string
		do   func(context.Context, seeded) error
	}{
		{"GET /clusters (first page of 50)", list(50, false)},
		{"GET /clusters (first and second page of 50)", list(50, true)},
		{"GET /clusters?limit=200 (an org's every cluster)", list(200, false)},
		{"GET /clusters/{id}", get},
		{"bundle fetch: its store calls", r.fetch},
		{"status report: its store calls", r.report},
	}
	var out []*timings
	for _, q := range reqs {
		t, err := r.time(ctx, q.what, n, q.do)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// issueTokens issues each of c's VMs a bearer token as IMDS issues it and
// an IMDS session, once, so a VM route's proofs pass and its call is
// counted as a VM's real call is. The session is written into the dev
// platform's table directly: its issuer issues one only to a VM row of its
// own, and the seed records no VM rows.
func (r *fleetReads) issueTokens(ctx context.Context, c seeded) error {
	for _, vm := range append(append([]int64{}, c.cpVMs...), c.workerVMs...) {
		if r.tokens[vm] != "" {
			continue
		}
		tok, err := simulator.IssueVMToken(ctx, r.platform, c.org, vm, time.Hour)
		if err != nil {
			return err
		}
		if _, err := r.platform.Exec(ctx, `INSERT INTO imds_tokens (hash, vm_id, org_id, expiry_at)
			VALUES ($1, $2, $3, now() + interval '1 hour')`, simulator.HashToken(imdsSession(tok)), vm, c.org); err != nil {
			return fmt.Errorf("issuing vm %d an IMDS session: %w", vm, err)
		}
		r.tokens[vm] = tok
	}
	return nil
}

// imdsSession is the IMDS session token of the VM whose bearer token is
// bearer.
func imdsSession(bearer string) string { return "imds-" + bearer }

// proofs is a VM route's first round trip: its tokens looked up and its
// call counted.
func (r *fleetReads) proofs(ctx context.Context, vm int64, route string) error {
	tok := r.tokens[vm]
	_, err := r.st.VMCallLookup(ctx, store.VMCall{VMID: vm, IMDSHash: simulator.HashToken(imdsSession(tok)),
		BearerHash: simulator.HashToken(tok), Count: &vmlimit.Count{Route: route, Now: time.Now(), Per: time.Minute}})
	return err
}

// fetch is a later bundle fetch's store calls: proofs, topology, its
// record (no window's identities, no phase move: the node is ready).
func (r *fleetReads) fetch(ctx context.Context, c seeded) error {
	vm := c.cpVMs[r.rnd.IntN(len(c.cpVMs))]
	if err := r.proofs(ctx, vm, "bundle"); err != nil {
		return err
	}
	if _, err := r.st.TopologyForVM(ctx, vm); err != nil {
		return err
	}
	_, err := r.st.RecordFetch(ctx, store.FetchWrites{Fetch: store.Fetch{VMID: vm, RequestID: "bench-fetch",
		Outcome: "served", FetchedAt: time.Now()}})
	return err
}

// report is a Ready node's status report of ready again, as its seed
// recorded it (no message): proofs, the guarded phase write, which finds
// nothing to change.
func (r *fleetReads) report(ctx context.Context, c seeded) error {
	vm := c.workerVMs[r.rnd.IntN(len(c.workerVMs))]
	if err := r.proofs(ctx, vm, "status"); err != nil {
		return err
	}
	_, err := r.st.AdvancePhase(ctx, store.PhaseChange{VMID: vm, OrgID: c.org, Role: store.RoleWorker, To: "ready",
		From: []string{"ready"}, FromOnceReady: []string{"ready"}, MarksReady: true})
	return err
}
