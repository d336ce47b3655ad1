package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// vmNode is an active one-node cluster's node, its VM and the VM's two
// tokens, on a store of one connection (the session a statement left is
// the next one's).
type vmNode struct {
	st      *store.Store
	pool    *pgxpool.Pool
	vm      int64
	imds    string
	bearer  string
	cluster int64
	t       testing.TB
}

const nodeVM = 4242

func activeNode(t testing.TB) vmNode {
	t.Helper()
	ctx := context.Background()
	pool, err := store.OpenPool(ctx, testenv.Postgres(t), store.PoolSettings{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	n := vmNode{st: store.New(pool), pool: pool, vm: nodeVM, t: t}
	n.cluster = founding(t, n.st, lease("founder", time.Minute))
	must(t, n.st.RecordVMs(ctx, store.ClusterLease(n.cluster, "founder"), map[int]int64{1: nodeVM}, nil))
	must(t, n.st.FinishFounding(ctx, n.cluster, "founder"))
	n.bearer, err = simulator.IssueVMToken(ctx, pool, 1, nodeVM, time.Hour)
	must(t, err)
	n.imds = "imds-" + n.bearer
	_, err = pool.Exec(ctx, `INSERT INTO imds_tokens (hash, vm_id, org_id, expiry_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
		simulator.HashToken(n.imds), nodeVM)
	must(t, err)
	return n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// call is one counted call of route by the node's VM.
func (n vmNode) call(route string) (store.VMCallRows, error) {
	return n.st.VMCallLookup(context.Background(), store.VMCall{VMID: n.vm, IMDSHash: simulator.HashToken(n.imds),
		BearerHash: simulator.HashToken(n.bearer), Count: &vmlimit.Count{Route: route, Now: time.Now(), Per: time.Minute}})
}

// report is the node's report of phase to with msg, allowed to leave the
// phases from, marking its first ready as the status route does.
func (n vmNode) report(to, msg string, from ...string) (store.PhaseOutcome, error) {
	return n.st.AdvancePhase(context.Background(), store.PhaseChange{VMID: n.vm, OrgID: 1, Role: store.RoleControlPlane,
		To: to, Message: msg, From: from, MarksReady: to == "ready"})
}

// row is the node's row version (xmin), message and updated_at.
func (n vmNode) row() (xmin, msg string, updated time.Time) {
	n.t.Helper()
	err := n.pool.QueryRow(context.Background(), `SELECT xmin::text, message, updated_at FROM kube_nodes WHERE vm_id = $1`,
		n.vm).Scan(&xmin, &msg, &updated)
	must(n.t, err)
	return xmin, msg, updated
}

// The count's transaction commits without waiting for its WAL (a lost
// count only lets a VM a few more calls), and only it: the session the
// batch ran on is synchronous again for the next statement, a fact's.
func TestCountingACallLeavesTheSessionSynchronous(t *testing.T) {
	n := activeNode(t)
	for want := 1; want <= 2; want++ {
		rows, err := n.call("status")
		if err != nil || rows.IMDSErr != nil || rows.PrincipalErr != nil || rows.Window == nil || rows.Window.Calls != want {
			t.Fatalf("call %d: %+v (%v), want counted as call %d", want, rows, err, want)
		}
	}
	var setting string
	must(t, n.pool.QueryRow(context.Background(), `SHOW synchronous_commit`).Scan(&setting))
	if setting != "on" {
		t.Errorf("synchronous_commit after a counted call: %s, want on (the batch's own setting only)", setting)
	}
}

// A report of the phase and message already recorded writes nothing: the
// row keeps its version and its updated_at (the phase's time, not a
// heartbeat: health reports have their own), and the report is answered
// as recorded. A new message is written; a report the guard refuses is
// refused though nothing would change.
func TestARepeatedReportWritesNothing(t *testing.T) {
	n := activeNode(t)
	upTo := []string{"pending", "bundle_fetched", "ready"}
	if out, err := n.report("ready", "up", upTo...); err != nil || !out.Moved {
		t.Fatalf("first ready: %+v (%v)", out, err)
	}
	xmin, _, updated := n.row()
	if out, err := n.report("ready", "up", upTo...); err != nil || !out.Moved || out.Current != "ready" {
		t.Fatalf("the same report again: %+v (%v), want recorded", out, err)
	}
	if x, _, u := n.row(); x != xmin || !u.Equal(updated) {
		t.Errorf("the same report again wrote the row: xmin %s → %s, updated_at %s → %s", xmin, x, updated, u)
	}
	if out, err := n.report("ready", "up", "pending"); err != nil || out.Moved {
		t.Errorf("the same report, ready not among the phases it may leave: %+v (%v), want refused", out, err)
	}
	if out, err := n.report("ready", "renewed", upTo...); err != nil || !out.Moved {
		t.Fatalf("ready with a new message: %+v (%v)", out, err)
	}
	if x, msg, _ := n.row(); x == xmin || msg != "renewed" {
		t.Errorf("a new message: xmin %s → %s, message %q; want written", xmin, x, msg)
	}
}

// BenchmarkCountedCall is a VM route's proofs with its call counted: the
// batch's commit is the count's. p50/p99 over every call.
func BenchmarkCountedCall(b *testing.B) {
	n := activeNode(b)
	timed(b, func() error { _, err := n.call("status"); return err })
}

// BenchmarkRepeatedReport is a ready node's report of ready again, the
// same message (what a node's shim repeats).
func BenchmarkRepeatedReport(b *testing.B) {
	n := activeNode(b)
	timed(b, func() error { _, err := n.report("ready", "up", "pending", "ready"); return err })
}

// BenchmarkRepeatedStatusCall is the status route's store calls for a
// ready node repeating its report: the proofs with the call counted, then
// the guarded phase write.
func BenchmarkRepeatedStatusCall(b *testing.B) {
	n := activeNode(b)
	timed(b, func() error {
		if _, err := n.call("status"); err != nil {
			return err
		}
		_, err := n.report("ready", "up", "pending", "ready")
		return err
	})
}

// timed runs do b.N times and reports each call's p50 and p99.
func timed(b *testing.B, do func() error) {
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := do(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	q := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkLaterFetchStoreCalls is a later bundle fetch's store calls (the
// proofs with the call counted, the topology, the fetch's record) for a
// node whose identities are stored and whose phase moved on, on a session
// as the function has it ("durable": the record's commit waits for its
// WAL), and for contrast on one that waits for none ("no-wal-wait",
// which the product never does for a record): the difference is the one
// synchronous commit a fetch keeps.
func BenchmarkLaterFetchStoreCalls(b *testing.B) {
	for _, sc := range []string{"on", "off"} {
		name := map[string]string{"on": "durable", "off": "no-wal-wait"}[sc]
		b.Run(name, func(b *testing.B) {
			n := activeNode(b)
			_, err := n.pool.Exec(context.Background(), `SELECT set_config('synchronous_commit', $1, false)`, sc)
			must(b, err)
			timed(b, func() error {
				if _, err := n.call("bundle"); err != nil {
					return err
				}
				if _, err := n.st.TopologyForVM(context.Background(), n.vm); err != nil {
					return err
				}
				_, err := n.st.RecordFetch(context.Background(), store.FetchWrites{Fetch: store.Fetch{VMID: n.vm,
					RequestID: "bench-fetch", Outcome: "served", FetchedAt: time.Now()}})
				return err
			})
		})
	}
}
