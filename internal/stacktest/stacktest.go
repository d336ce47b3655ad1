// Package stacktest wires k8sapi's use cases and HTTP handlers in-process,
// the way the functions' mains do, for tests that drive every route against
// real parts (internal/integration, internal/faultinjection). Only tests
// import it; no function links it.
//
// In: each function's pool (logged in as that function's own database user,
// FunctionPools), an envelope and the simulator's URL. Out: each function's
// use cases and api.Server, and one handler serving every function's routes;
// and the requests both test packages make of it (client.go): Do, which
// holds every answer to the OpenAPI document, and a Client that acts as an
// org's operator and as a VM.
package stacktest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vmlimit"
	"github.com/excloud/k8sapi/internal/wiring"
)

// Config is what the in-process stack is built from.
type Config struct {
	// Pools holds each function's own pool, by logical id, logged in as the
	// function's database user (FunctionPools): every route runs with its
	// function's grants only, so a missing grant fails the test using it.
	Pools            map[string]*pgxpool.Pool
	Envelope         *envelope.Envelope
	SimURL           string       // the platform simulator (compute at /compute, DNS at /dns)
	SimClient        *http.Client // nil: one with the platform clients' default timeout
	BaseDomain       string
	BootstrapBaseURL string
	Log              *slog.Logger
	// WrapTopologies, when set, wraps the store for bundle fetches, so a
	// test can hold a fetch mid-way.
	WrapTopologies func(nodebootstrap.Topologies) nodebootstrap.Topologies
	// Now and Leaves, when set, are the clock every certificate is issued
	// and judged by and the leaf lifetime and renewal window.
	Now    func() time.Time
	Leaves pki.LeafSchedule
	// BootstrapWindow is BOOTSTRAP_WINDOW (0: progress.DefaultWindow).
	BootstrapWindow time.Duration
	// Artifacts is the configured artifact set with its pins (nil:
	// PinnedArtifacts, every file of the default versions pinned).
	Artifacts *artifacts.Set
	// SnapshotBucket is the etcd snapshots' bucket (nil: a bucket that
	// is unavailable, for tests that take no snapshot).
	SnapshotBucket etcdsnapshot.Bucket
	// CADistrustWait shortens a CA rotation's wait before its distrust
	// (usecase.Settings.CADistrustWait; 0: the default).
	CADistrustWait time.Duration
	// DNSTTL is the control-plane name's TTL in seconds
	// (usecase.Settings.DNSTTL; 0: the default).
	DNSTTL int
}

// PinnedArtifacts is the default artifact set with a made-up pin for every
// file of the default versions on every architecture (the digest of its
// name), so founding never refuses for want of pins.
func PinnedArtifacts() artifacts.Set {
	a := artifacts.Default()
	a.SHA256 = map[string]string{}
	for _, f := range a.Files(artifacts.DefaultKubernetesVersion, "") {
		sum := sha256.Sum256([]byte(f.Name))
		a.SHA256[f.Name] = hex.EncodeToString(sum[:])
	}
	return a
}

// Stack is k8sapi in-process.
type Stack struct {
	Founder    *usecase.Deps          // CreateClusterFunction's use cases' dependencies
	Clusters   *usecase.Deps          // ClustersFunction's
	Reconciler *usecase.Deps          // ReconcilerFunction's, for reconciler.Reconciler
	Bundles    *nodebootstrap.Service // GetBundleFunction's bundle and renewal use cases
	// Snapshots is ReconcilerFunction's etcd snapshot schedule.
	Snapshots *etcdsnapshot.Schedule
	// Workers is a worker's bootstrap (its bundle, its certificate
	// requests) over GetBundleFunction's store, as that function serves it.
	Workers *nodebootstrap.WorkerService
	// Servers are each route function's server, by logical id.
	Servers map[string]*api.Server
	// Handler serves the routes of every function the stack has use cases
	// for, each through its own function's handler, as the gateway does.
	Handler http.Handler
}

// functions are the functions whose use cases New wires.
var functions = []string{"CreateClusterFunction", "ClustersFunction", "GetBundleFunction", "ReconcilerFunction"}

// FunctionPools opens a pool per function of the stack, each at the DSN
// dsnOf gives it (testenv.FunctionDSN: logged in as the function's own
// user), and closes them when the test ends.
func FunctionPools(t testing.TB, dsnOf func(function string) string, tracer pgx.QueryTracer) map[string]*pgxpool.Pool {
	t.Helper()
	pools := map[string]*pgxpool.Pool{}
	for _, fn := range functions {
		pool, err := store.Open(context.Background(), dsnOf(fn), tracer)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		pools[fn] = pool
	}
	return pools
}

// storesOf is a store per function, refusing a function without its pool:
// falling back to another function's would hide a missing grant.
func storesOf(pools map[string]*pgxpool.Pool) (map[string]*store.Store, error) {
	stores := map[string]*store.Store{}
	for _, fn := range functions {
		if pools[fn] == nil {
			return nil, fmt.Errorf("stacktest: no pool for %s", fn)
		}
		stores[fn] = store.New(pools[fn])
	}
	return stores, nil
}

// New builds the stack.
func New(cfg Config) (*Stack, error) {
	renderer, err := bundle.NewRenderer()
	if err != nil {
		return nil, err
	}
	stores, err := storesOf(cfg.Pools)
	if err != nil {
		return nil, err
	}
	st := &Stack{
		Founder:    founder(cfg, stores["CreateClusterFunction"], renderer),
		Clusters:   founder(cfg, stores["ClustersFunction"], renderer),
		Reconciler: founder(cfg, stores["ReconcilerFunction"], renderer),
	}
	// Founding keeps a zero lifetime (the cert table's); renewal needs one.
	if cfg.Leaves == (pki.LeafSchedule{}) {
		cfg.Leaves = pki.DefaultLeafSchedule()
	}
	st.Bundles = bundles(cfg, stores["GetBundleFunction"], renderer)
	st.Workers = &nodebootstrap.WorkerService{Service: st.Bundles, Workers: stores["GetBundleFunction"]}
	st.Servers = st.servers(cfg, stores)
	st.Handler = st.mux()
	return st, nil
}

// founder is one function's use cases' dependencies over its own store.
func founder(cfg Config, st *store.Store, r *bundle.Renderer) *usecase.Deps {
	pinned := artifactsOf(cfg)
	return &usecase.Deps{
		Store: st, Envelope: cfg.Envelope, Renderer: r, Log: cfg.Log,
		Compute: compute.NewHTTP(cfg.SimURL+"/compute", cfg.SimClient),
		DNS:     dns.NewHTTP(cfg.SimURL+"/dns", cfg.SimClient),
		Settings: usecase.Settings{
			BaseDNSDomain: cfg.BaseDomain, BootstrapBaseURL: cfg.BootstrapBaseURL, KubernetesVersion: artifacts.DefaultKubernetesVersion,
			ServiceCIDR: usecase.DefaultServiceCIDR, PodCIDR: usecase.DefaultPodCIDR, ClusterDomain: usecase.DefaultClusterDomain,
			LeafLifetime: cfg.Leaves.Lifetime, Artifacts: pinned, CADistrustWait: cfg.CADistrustWait, DNSTTL: cfg.DNSTTL,
		},
		Now: cfg.Now,
	}
}

func artifactsOf(cfg Config) artifacts.Set {
	if cfg.Artifacts != nil {
		return *cfg.Artifacts
	}
	return PinnedArtifacts()
}

// bundles is GetBundleFunction's bundle and renewal use case.
func bundles(cfg Config, st *store.Store, r *bundle.Renderer) *nodebootstrap.Service {
	var topologies nodebootstrap.Topologies = st
	if cfg.WrapTopologies != nil {
		topologies = cfg.WrapTopologies(st)
	}
	return &nodebootstrap.Service{Store: topologies, Renewer: st, CRLs: st, Memberships: st, Steps: st, Envelope: cfg.Envelope, Renderer: r,
		Artifacts: artifactsOf(cfg), Leaves: cfg.Leaves, Window: window(cfg), Now: cfg.Now, Log: cfg.Log}
}

func window(cfg Config) time.Duration { return cmp.Or(cfg.BootstrapWindow, progress.DefaultWindow) }

// servers are the route functions' servers, each authenticating through
// its own store, with the use cases its main wires.
func (st *Stack) servers(cfg Config, stores map[string]*store.Store) map[string]*api.Server {
	server := func(fn string) *api.Server {
		return &api.Server{Auth: &auth.Authenticator{Tokens: stores[fn], Now: cfg.Now}, Audit: stores[fn], Log: cfg.Log}
	}
	create, clusters, vm := server("CreateClusterFunction"), server("ClustersFunction"), server("GetBundleFunction")
	wiring.ServeFounding(create, st.Founder)
	wiring.ServeClusters(clusters, st.Clusters)
	clusters.Nodes = &progress.Nodes{Store: stores["ClustersFunction"], Window: window(cfg), Now: cfg.Now}
	vm.Bundles, vm.Renewals, vm.Workers, vm.EtcdCRLs, vm.EtcdMemberships = st.Bundles, st.Bundles, st.Workers, st.Bundles, st.Bundles
	vm.Addons = st.Bundles
	vm.Progress = &progress.Service{Store: stores["GetBundleFunction"]}
	vm.Health = &nodehealth.Service{Store: stores["GetBundleFunction"], Now: cfg.Now}
	vm.Limits = &vmlimit.Limiter{Now: cfg.Now}
	clusters.Snapshots = &etcdsnapshot.Operator{Store: stores["ClustersFunction"], Now: cfg.Now}
	bucket := cfg.SnapshotBucket
	if bucket == nil {
		bucket = &objectstore.Bucket{} // no bucket: storage_unavailable
	}
	vm.SnapshotNodes = &etcdsnapshot.Node{Store: stores["GetBundleFunction"], Bucket: bucket, Now: cfg.Now}
	st.Snapshots = &etcdsnapshot.Schedule{Store: stores["ReconcilerFunction"], Now: cfg.Now}
	return map[string]*api.Server{"CreateClusterFunction": create, "ClustersFunction": clusters, "GetBundleFunction": vm}
}

// mux routes each route to its own function's handler.
func (st *Stack) mux() http.Handler {
	mux := http.NewServeMux()
	for fn, srv := range st.Servers {
		f := api.FunctionNamed(fn)
		h := srv.Handler(f)
		for _, r := range f.Routes() {
			mux.Handle(r.Method+" "+r.Path, h)
		}
	}
	return mux
}

// LockedBuffer collects log lines written by concurrent requests.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
