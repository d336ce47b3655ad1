package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

var opsT0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// lease is a lease of owner lasting d from opsT0.
func lease(owner string, d time.Duration) store.Lease {
	return store.Lease{Owner: owner, Until: opsT0.Add(d)}
}

// founding begins a founding of one node held by l, answering its id.
func founding(t testing.TB, st *store.Store, l store.Lease) int64 {
	t.Helper()
	ctx := context.Background()
	id, err := st.ReserveClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprint("key-", id)
	c := store.Cluster{ID: id, OrgID: 1, ProjectID: 1, Name: fmt.Sprint("exk8s-1-", id), ControlPlaneDNSName: "cp.example",
		KeyAlgorithm: "ecdsa-p256", KubernetesVersion: "v1.35.4", ClusterDomain: "cluster.local", ServiceCIDR: "10.96.0.0/12",
		PodCIDR: "172.16.0.0/12", CNI: "cilium", ControlPlaneCount: 1, SecurityGroupIDs: []int64{}, KMSKeyID: "k",
		WrappedDataKey: []byte{1}, CAKeySealed: []byte{1}, EtcdCAKeySealed: []byte{1}, FrontProxyCAKeySealed: []byte{1},
		ServiceAccountKeySealed: []byte{1}, IdempotencyKey: &key, FoundingSpec: []byte(`{"asked":true}`)}
	if err := st.BeginFounding(ctx, c, []store.Node{{Ordinal: 1, Name: "cp-1"}}, l); err != nil {
		t.Fatal(err)
	}
	return id
}

// The one claim takes the oldest due operation whatever its kind, under
// a fresh lease; the driver whose lease ran out then writes nothing, and
// the claimer finishes it.
func TestOneClaimTakesAnyKindAndFencesTheDriverThatLostIt(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	id := founding(t, st, lease("first", time.Minute))
	if _, err := st.ClaimDue(ctx, lease("early", 7*time.Minute), opsT0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim while the founding's lease holds: %v, want nothing due", err)
	}
	released := store.Released{Status: store.StatusFounding, Until: opsT0, Resumable: true, Step: "vms"}
	if err := st.Release(ctx, id, "first", released); err != nil {
		t.Fatal(err)
	}
	if ops, err := st.OperationsOf(ctx, id); err != nil || len(ops) != 1 || ops[0].Step != "vms" || ops[0].State != store.OpRunning {
		t.Fatalf("operations %+v (%v), want the founding running, let go at step vms", ops, err)
	}
	op, err := st.ClaimDue(ctx, lease("second", 8*time.Minute), opsT0.Add(2*time.Minute))
	if err != nil || op.Kind != store.KindFounding || op.ClusterID != id || op.OrgID != 1 {
		t.Fatalf("claimed %+v (%v), want cluster %d's founding", op, err, id)
	}
	if err := st.MarkSecurityGroupRequested(ctx, id, "first"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the first driver's write: %v, want ErrLeaseLost", err)
	}
	if err := st.FinishFounding(ctx, id, "first"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the first driver's finish: %v, want ErrLeaseLost", err)
	}
	if err := st.FinishFounding(ctx, id, "second"); err != nil {
		t.Fatal(err)
	}
	c, err := st.Cluster(ctx, 1, id)
	if err != nil || c.Status != store.StatusActive || c.LastOp == nil || c.LastOp.State != store.OpSucceeded ||
		string(c.FoundingSpec) != `{"asked": true}` {
		t.Fatalf("cluster %s, last operation %+v, spec %s (%v); want active, its founding succeeded, the spec kept",
			c.Status, c.LastOp, c.FoundingSpec, err)
	}
	replacement := replacing(t, st, id)
	op, err = st.ClaimDue(ctx, lease("third", 8*time.Minute), opsT0.Add(2*time.Minute))
	if err != nil || op.Kind != store.KindNodeReplacement || op.TargetID != replacement {
		t.Fatalf("claimed %+v (%v), want replacement %d (no driver took it yet)", op, err, replacement)
	}
}

// "No live operation on this cluster" is one check: a replacement holds
// a deletion off whatever its lease; a pool operation while its lease
// holds, not once its driver died.
func TestDeletionWaitsForTheLiveOperationsOfItsCluster(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	id := founding(t, st, lease("founder", time.Minute))
	if err := st.FinishFounding(ctx, id, "founder"); err != nil {
		t.Fatal(err)
	}
	pool := store.Pool{ClusterID: id, Name: "web", Count: 0, InstanceType: "e2.medium", ImageID: 1, SubnetID: 1,
		Labels: map[string]string{}}
	if _, err := st.BeginPoolOperation(ctx, store.PoolChange{OrgID: 1, Pool: pool, State: store.PoolCreating,
		Lease: lease("pooler", time.Minute), Now: opsT0, Name: func(o int) string { return fmt.Sprint("w-", o) }}); err != nil {
		t.Fatal(err)
	}
	if err := st.BeginDeleting(ctx, 1, id, lease("deleter", 7*time.Minute), opsT0); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("deleting beside a leased pool operation: %v, want ErrLeaseLost", err)
	}
	replacing(t, st, id)
	if err := st.BeginDeleting(ctx, 1, id, lease("deleter", 9*time.Minute), opsT0.Add(2*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("deleting beside a replacement: %v, want ErrLeaseLost", err)
	}
	endReplacement(t, st, id)
	if err := st.BeginDeleting(ctx, 1, id, lease("deleter", 9*time.Minute), opsT0.Add(2*time.Minute)); err != nil {
		t.Fatalf("deleting once the pool's driver died and the replacement ended: %v", err)
	}
	if err := st.EndOperation(ctx, id, "deleter", store.StatusDeleted, ""); err != nil {
		t.Fatal(err)
	}
	ops, err := st.OperationsOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var live []store.OpTarget
	for _, o := range ops {
		if o.State == store.OpRunning || o.Leased {
			live = append(live, o)
		}
	}
	if len(ops) != 4 || len(live) != 0 || ops[1].Reason != store.ReasonSuperseded || ops[3].Kind != store.KindDeletion {
		t.Fatalf("operations %+v; want the founding, the pool's (superseded), the replacement's and the deletion, none live", ops)
	}
}

// replacing begins the replacement of cluster id's first node.
func replacing(t *testing.T, st *store.Store, id int64) int64 {
	t.Helper()
	nodes, err := st.ClusterNodes(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.BeginReplacement(context.Background(), store.ReplacementStart{OrgID: 1, Old: nodes[0],
		Name: func(o int) string { return fmt.Sprint("cp-", o) }})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// endReplacement claims cluster id's replacement and ends it done.
func endReplacement(t *testing.T, st *store.Store, id int64) {
	t.Helper()
	ctx := context.Background()
	r, err := st.LiveReplacement(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for {
		op, err := st.ClaimDue(ctx, lease("replacer", 9*time.Minute), opsT0.Add(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if op.Kind == store.KindNodeReplacement {
			break
		}
	}
	if err := st.EndReplacement(ctx, id, "replacer", r.ID, store.ReplacementEnd{State: store.ReplacementDone}); err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	pool, err := store.Open(context.Background(), testenv.Postgres(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool)
}

// A deletion goes ahead of a founding whose driver died: the founding
// ends superseded, the deletion runs under the caller's lease, and the
// founding's driver writes nothing more.
func TestDeletionSupersedesAnAbandonedFounding(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	id := founding(t, st, lease("founder", time.Minute))
	if err := st.BeginDeleting(ctx, 1, id, lease("deleter", 7*time.Minute), opsT0); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("deleting a founding whose lease holds: %v, want ErrLeaseLost", err)
	}
	if err := st.BeginDeleting(ctx, 1, id, lease("deleter", 9*time.Minute), opsT0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkSecurityGroupRequested(ctx, id, "founder"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the founding's driver's write: %v, want ErrLeaseLost", err)
	}
	ops, err := st.OperationsOf(ctx, id)
	if err != nil || len(ops) != 2 || ops[0].Reason != store.ReasonSuperseded || ops[1].Kind != store.KindDeletion ||
		ops[1].State != store.OpRunning || !ops[1].Leased {
		t.Fatalf("operations %+v (%v); want the founding superseded, a deletion running under a lease", ops, err)
	}
}

// The remediation sweep waits for every live operation of the cluster,
// a pool's even once its driver died, as the table of operations has it.
func TestClusterOperationsAreTheLiveOnes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	id := founding(t, st, lease("founder", time.Minute))
	if running, err := st.ClusterOperations(ctx, id); err != nil || len(running) != 1 || running[0] != "the cluster's founding" {
		t.Fatalf("operations of a founding cluster: %q (%v), want its founding", running, err)
	}
	if err := st.FinishFounding(ctx, id, "founder"); err != nil {
		t.Fatal(err)
	}
	pool := store.Pool{ClusterID: id, Name: "web", Count: 0, InstanceType: "e2.medium", ImageID: 1, SubnetID: 1,
		Labels: map[string]string{}}
	p, err := st.BeginPoolOperation(ctx, store.PoolChange{OrgID: 1, Pool: pool, State: store.PoolCreating,
		Lease: lease("pooler", time.Minute), Now: opsT0, Name: func(o int) string { return fmt.Sprint("w-", o) }})
	if err != nil {
		t.Fatal(err)
	}
	r := replacing(t, st, id)
	want := []string{"node pool web is creating", fmt.Sprintf("node cp-1 is being replaced (replacement %d)", r)}
	if running, err := st.ClusterOperations(ctx, id); err != nil || !slices.Equal(running, want) {
		t.Fatalf("operations: %q (%v), want %q", running, err, want)
	}
	endReplacement(t, st, id)
	if err := st.SettlePool(ctx, p.ID, "pooler", store.PoolActive, "", nil); err != nil {
		t.Fatal(err)
	}
	if running, err := st.ClusterOperations(ctx, id); err != nil || len(running) != 0 {
		t.Fatalf("operations once every one ended: %q (%v), want none", running, err)
	}
}

// The claim with nothing due reads no ended operation: the table keeps
// every operation ever run (the conditions read the latest), and the
// claim finds the live ones over operations_due_by_lease, which holds
// only those. Without it and the table's other indexes of only the live ones (dropped,
// the contrast), the claim reads every ended row.
func TestClaimWithNothingDueReadsNoEndedOperation(t *testing.T) {
	ctx := context.Background()
	pool, st, _ := withEndedOperations(t)
	claim := func() int64 {
		t.Helper()
		return operationRowsRead(t, pool, func() {
			if _, err := st.ClaimDue(ctx, lease("sweep", time.Minute), opsT0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("claim: %v, want nothing due", err)
			}
		})
	}
	if n := claim(); n != 0 {
		t.Errorf("the claim with nothing due read %d rows of operations, want 0", n)
	}
	_, err := pool.Exec(ctx, `DROP INDEX operations_due_by_lease, operations_live_of_cluster, operations_one_live`)
	must(t, err)
	if n := claim(); n < 5000 {
		t.Errorf("contrast: without the indexes of live operations the claim read %d rows of operations, so this test proves nothing", n)
	}
}

// A sweep with many operations due, among a history of ended ones, reads
// about one row per claim: the claim's order is its index's
// (operations_due_by_lease), so a claim reads neither the due operations it leaves nor those already claimed. The
// statistics are a quiet table's (analyzed before the operations began),
// as a reconciler finds them when work arrives at once. Without that
// index (dropped, the contrast) each claim reads every running operation.
func TestClaimsOfManyDueReadAboutOneRowEach(t *testing.T) {
	ctx := context.Background()
	pool, st, id := withEndedOperations(t)
	const due = 200
	begin := func() {
		t.Helper()
		_, err := pool.Exec(ctx, `DELETE FROM operations WHERE kind = 'node-pool'`)
		must(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, lease_owner, lease_until)
			SELECT 'node-pool', $1, 'node_pool', g, 'running', 'InProgress', CASE WHEN g % 2 = 0 THEN 'died' END,
			       CASE WHEN g % 2 = 0 THEN $2::timestamptz - interval '1 minute' END
			FROM generate_series(1, $3::int) g`, id, opsT0, due)
		must(t, err)
	}
	claimAll := func() int64 {
		t.Helper()
		begin()
		return operationRowsRead(t, pool, func() {
			for range due {
				if _, err := st.ClaimDue(ctx, lease("sweep", time.Minute), opsT0); err != nil {
					t.Fatalf("claim: %v", err)
				}
			}
		})
	}
	n := claimAll()
	t.Logf("%d claims read %d rows of operations", due, n)
	if n > 3*due {
		t.Errorf("%d claims read %d rows of operations, want at most %d", due, n, 3*due)
	}
	_, err := pool.Exec(ctx, `DROP INDEX operations_due_by_lease`)
	must(t, err)
	if n = claimAll(); n < due*due/4 {
		t.Errorf("contrast: without operations_due_by_lease %d claims read %d rows of operations, so this test proves nothing", due, n)
	}
}

// withEndedOperations is a store on a pool of one connection whose one
// cluster has a history of 5,000 ended operations (a fleet keeps every
// one), analyzed: the cluster's id.
func withEndedOperations(t *testing.T) (*pgxpool.Pool, *store.Store, int64) {
	t.Helper()
	ctx := context.Background()
	pool, err := store.OpenPool(ctx, testenv.Postgres(t), store.PoolSettings{MaxConns: 1})
	must(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	id := founding(t, st, lease("founder", time.Minute))
	must(t, st.FinishFounding(ctx, id, "founder"))
	_, err = pool.Exec(ctx, `INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, ended_at)
		SELECT 'node-replacement', $1, 'node_replacement', g, 'succeeded', 'Succeeded', now() FROM generate_series(1, 5000) g`, id)
	must(t, err)
	_, err = pool.Exec(ctx, `ANALYZE operations`)
	must(t, err)
	return pool, st, id
}

// operationRowsRead is the heap rows of operations that do read on pool's
// one connection (sequential and index scans), from its backend's
// statistics, flushed before each reading and read from a session of its
// own with a fresh snapshot.
func operationRowsRead(t *testing.T, pool *pgxpool.Pool, do func()) int64 {
	t.Helper()
	ctx := context.Background()
	watcher, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	must(t, err)
	defer func() { _ = watcher.Close(ctx) }()
	read := func() int64 {
		t.Helper()
		_, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		must(t, err)
		var n int64
		must(t, watcher.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
			FROM pg_stat_user_tables WHERE relname = 'operations'`).Scan(&n))
		return n
	}
	before := read()
	do()
	return read() - before
}
