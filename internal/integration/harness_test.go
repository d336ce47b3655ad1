package integration

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/internal/usecase"
)

const baseDomain = "k8s.test.excloud"

// testWindow is the stacks' BOOTSTRAP_WINDOW: shorter than the simulator's
// token lifetimes (an hour), so a test steps past it with tokens still live.
const testWindow = 10 * time.Minute

// stack is k8sapi in-process: every function's routes on one server, over a
// fresh database, a fresh KMS key and a simulator.
type stack struct {
	t                 *testing.T
	pool              *pgxpool.Pool // the owner's: the tests' own setup and checks, never a route's
	dsn               string        // the owner's, for tools (pg_dump)
	sim               *simulator.Simulator
	simURL            string
	api               *httptest.Server
	envelope          *envelope.Envelope
	founder           *usecase.Deps           // CreateClusterFunction's founding
	clusters          *usecase.Deps           // ClustersFunction's list, read and delete
	reconciler        *usecase.Deps           // ReconcilerFunction's operations
	bundles           *nodebootstrap.Service  // the bundle use case, whose configured artifacts a test may change
	servers           map[string]*api.Server  // each function's handlers: servers[id].Handler(id)
	schedule          *etcdsnapshot.Schedule  // ReconcilerFunction's etcd snapshot schedule
	logs              *stacktest.LockedBuffer // what the handlers and use cases logged, at debug level
	clock             *clock                  // k8sapi's clock: real time plus what a test advanced it by
	*stacktest.Client                         // the operator's and the VMs' requests
}

// clock is real time moved forward by a test (bootstrap windows), never
// back, so tokens the simulator issued on real time stay live.
type clock struct{ ahead atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *clock) Advance(d time.Duration) { c.ahead.Add(int64(d)) }

// withShortDNSTTL gives the control-plane name a TTL of a second: a
// replacement or a shrink that moves the name off a node waits that TTL
// out before the node's VM goes (controlplane's nameOff), which the
// default five minutes would make a test on the real clock wait.
func withShortDNSTTL(c *stacktest.Config) { c.DNSTTL = 1 }

// newStack builds the stack; opts adjust its configuration (a clock, lifetimes).
func newStack(t *testing.T, opts ...func(*stacktest.Config)) *stack {
	t.Helper()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	pool, err := store.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The simulator stands for other services with their own connections:
	// sharing k8sapi's small pool would let founding transactions starve
	// the compute API they are waiting on.
	simPool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(simPool.Close)
	sim, err := simulator.New(simulator.Config{DB: simPool})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)

	kmsClient, keyID := testenv.KMSKey(t)
	env := envelope.New(kmsClient, keyID, nil)
	s := &stack{t: t, pool: pool, dsn: dsn, sim: sim, simURL: simSrv.URL, envelope: env, logs: &stacktest.LockedBuffer{}, clock: &clock{}}
	cfg := stacktest.Config{
		// Every function as its own database user; the functions' tracer:
		// a test that turns DebugCounters on reads each request's round
		// trips from its headers.
		Pools: stacktest.FunctionPools(t, func(fn string) string { return testenv.FunctionDSN(t, dsn, fn) }, metrics.QueryTracer{}), Envelope: env, SimURL: simSrv.URL, SimClient: simSrv.Client(),
		BaseDomain: baseDomain, BootstrapBaseURL: "https://k8sapi.test.excloud",
		Now: s.clock.Now, BootstrapWindow: testWindow,
		Log: slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	in, err := stacktest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.founder, s.clusters, s.bundles, s.servers, s.schedule = in.Founder, in.Clusters, in.Bundles, in.Servers, in.Snapshots
	s.reconciler = in.Reconciler
	s.api = httptest.NewServer(in.Handler)
	t.Cleanup(s.api.Close)
	s.Client = &stacktest.Client{T: t, APIURL: s.api.URL, SimURL: simSrv.URL, Pool: pool}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
