package faultinjection

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// gate holds one kind of call until the test lets it go: the test acts (stops
// a server) while a founding or a fetch is known to be mid-way, with no
// sleeps and no timing.
type gate struct {
	mu      sync.Mutex
	n, on   int           // hold the on-th call (0: none)
	arrived chan struct{} // closed when the held call arrives
	release chan struct{} // closed by the test to let it go on
	served  chan struct{} // closed once the held call was let go and answered
}

func (g *gate) holdOn(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n, g.on, g.arrived, g.release, g.served = 0, n, make(chan struct{}), make(chan struct{}), make(chan struct{})
}

// pass holds the on-th call until release, and answers whether it held it.
func (g *gate) pass() (held bool) {
	g.mu.Lock()
	g.n++
	hold := g.on != 0 && g.n == g.on
	arrived, release := g.arrived, g.release
	g.mu.Unlock()
	if hold {
		close(arrived)
		<-release
	}
	return hold
}

// stack is k8sapi in-process over this package's Postgres and a moto of the
// test's own, the simulator behind a gate on instance creates, and the
// bundle's topology load behind another.
type stack struct {
	t    *testing.T
	pool *pgxpool.Pool // the owner's: the tests' own setup and checks
	// pools are the functions' own, each logged in as its function's
	// database user; never rebuilt.
	pools      map[string]*pgxpool.Pool
	simPool    *pgxpool.Pool // the simulator's: another service, its own pool
	sim        *simulator.Simulator
	stopMoto   func()
	vmCreates  gate
	sgCreates  gate
	vmReads    gate
	vmDeletes  gate
	refReads   gate // reads of a founding's platform references (subnet, image, instance type)
	topologies gate
	founder    *usecase.Deps // CreateClusterFunction's
	clustersFn *usecase.Deps // ClustersFunction's
	reconciler *usecase.Deps // ReconcilerFunction's
	reconciles int           // reconciler runs so far (durable_test.go)
	logs       *stacktest.LockedBuffer
	// What a real function process needs to reach the same parts
	// (killed_test.go).
	dsn, simURL, motoEndpoint, kmsKeyID string
	*stacktest.Client
}

type gatedTopologies struct {
	g     *gate
	inner nodebootstrap.Topologies
}

func (g gatedTopologies) TopologyForVM(ctx context.Context, vmID int64) (store.Topology, error) {
	_ = g.g.pass()
	return g.inner.TopologyForVM(ctx, vmID)
}

func (g gatedTopologies) RecordFetch(ctx context.Context, w store.FetchWrites) (store.FetchWritten, error) {
	return g.inner.RecordFetch(ctx, w)
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	if err := pg.Start(ctx); err != nil { // a previous test may have left it stopped
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	name := localpg.UniqueDatabaseName("k8sapi_faults")
	dsn, err := localpg.CreateDatabase(ctx, pg.DSN(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := localpg.ApplyMigrations(ctx, dsn, true); err != nil {
		t.Fatal(err)
	}
	if err := localpg.EnsureFunctionLogins(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	pool, err := store.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	simPool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		simPool.Close()
		if err := pg.Start(ctx); err == nil {
			_ = localpg.DropDatabase(ctx, pg.DSN(), name)
		}
	})
	s := &stack{t: t, pool: pool, simPool: simPool, logs: &stacktest.LockedBuffer{}}
	if s.sim, err = simulator.New(simulator.Config{DB: simPool}); err != nil {
		t.Fatal(err)
	}
	simHandler := s.sim.Handler()
	simSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := s.gateFor(r)
		if g != nil {
			// A platform that took the request (body and all) finishes it
			// even if its caller dies meanwhile (killed_test.go).
			body, _ := io.ReadAll(r.Body)
			r = r.WithContext(context.WithoutCancel(r.Context()))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		held := g != nil && g.pass()
		simHandler.ServeHTTP(w, r)
		if held {
			close(g.served)
		}
	}))
	t.Cleanup(simSrv.Close)
	s.simURL = simSrv.URL

	// A moto of this test's own: the test may stop it.
	t.Setenv("AWS_ENDPOINT_URL", "")
	endpoint, stopMoto, err := localaws.StartMoto(ctx, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMoto)
	s.stopMoto = stopMoto
	s.motoEndpoint = endpoint
	cfg := localaws.AWSConfig(endpoint)
	cfg.RetryMaxAttempts = 1
	keyID, err := localaws.CreateKMSKey(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	s.dsn, s.kmsKeyID = dsn, keyID
	env := envelope.New(kms.NewFromConfig(cfg), keyID, nil)

	s.pools = stacktest.FunctionPools(t, func(fn string) string {
		fdsn, err := localpg.FunctionDSN(dsn, fn)
		if err != nil {
			t.Fatal(err)
		}
		return fdsn
	}, nil)
	in, err := stacktest.New(stacktest.Config{
		Pools: s.pools, Envelope: env, SimURL: simSrv.URL, SimClient: simSrv.Client(),
		BaseDomain: "k8s.faults.excloud", BootstrapBaseURL: "https://k8sapi.faults.excloud",
		// A rotation's distrust waits less than the reconciler runs' 10
		// minutes apart (carotation_test.go).
		CADistrustWait: 5 * time.Minute,
		Log:            slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		WrapTopologies: func(t nodebootstrap.Topologies) nodebootstrap.Topologies {
			return gatedTopologies{&s.topologies, t}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.founder, s.clustersFn, s.reconciler = in.Founder, in.Clusters, in.Reconciler
	apiSrv := httptest.NewServer(in.Handler)
	t.Cleanup(apiSrv.Close)
	s.Client = &stacktest.Client{T: t, APIURL: apiSrv.URL, SimURL: simSrv.URL, Pool: pool}
	return s
}

// gateFor is the gate a compute call passes, if any.
func (s *stack) gateFor(r *http.Request) *gate {
	instance := strings.HasPrefix(r.URL.Path, "/compute/v1/instances/")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/compute"+compute.PathInstances:
		return &s.vmCreates
	case r.Method == http.MethodPost && r.URL.Path == "/compute"+compute.PathSecurityGroups:
		return &s.sgCreates
	case r.Method == http.MethodGet && instance:
		return &s.vmReads
	case r.Method == http.MethodDelete && instance:
		return &s.vmDeletes
	case r.Method == http.MethodGet && isRefRead(r.URL.Path):
		return &s.refReads
	}
	return nil
}

// isRefRead: path is a read of a subnet, an image or an instance type.
func isRefRead(path string) bool {
	for _, p := range []string{"/compute/v1/subnets/", "/compute/v1/images/", "/compute/v1/instance-types/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// calls is how many calls g has passed so far.
func (g *gate) calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// createHeldAtVM starts founding a three-node cluster for org 1 and returns
// once its n-th VM create is held; the answer arrives on the channel after
// the test closes s.vmCreates.release.
func (s *stack) createHeldAtVM(n int) <-chan stacktest.Response {
	s.vmCreates.holdOn(n)
	done := make(chan stacktest.Response, 1)
	go func() { done <- s.Create(1, stacktest.ThreeNodes) }()
	<-s.vmCreates.arrived
	return done
}

// counts reads what exists: clusters, nodes, VMs ever created, live VMs.
func (s *stack) counts() (clusters, nodes, created, live int) {
	s.t.Helper()
	ctx := context.Background()
	for q, v := range map[string]*int{
		`SELECT count(*) FROM kube_clusters`: &clusters, `SELECT count(*) FROM kube_nodes`: &nodes, `SELECT count(*) FROM vms`: &created,
	} {
		if err := s.pool.QueryRow(ctx, q).Scan(v); err != nil {
			s.t.Fatal(err)
		}
	}
	l, err := s.sim.LiveInstances(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return clusters, nodes, created, len(l)
}
