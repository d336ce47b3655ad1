// Package stacktest wires k8sapi's use cases and HTTP handlers in-process,
// the way the functions' mains do, for tests that drive every route against
// real parts (internal/integration, internal/faultinjection). Only tests
// import it; no function links it.
//
// In: a pool, an envelope and the simulator's URL. Out: the founding
// service, the api.Server and one handler serving every function's routes;
// and the requests both test packages make of it (client.go): Do, which
// holds every answer to the OpenAPI document, and a Client that acts as an
// org's operator and as a VM.
package stacktest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/founding"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// Config is what the in-process stack is built from.
type Config struct {
	Pool             *pgxpool.Pool // k8sapi's own pool
	Envelope         *envelope.Envelope
	SimURL           string       // the platform simulator (compute at /compute, DNS at /dns)
	SimClient        *http.Client // nil: one with the platform clients' default timeout
	BaseDomain       string
	BootstrapBaseURL string
	Log              *slog.Logger
	// WrapTopologies, when set, wraps the store for bundle fetches, so a
	// test can hold a fetch mid-way.
	WrapTopologies func(nodebootstrap.Topologies) nodebootstrap.Topologies
	// Now and Renewal, when set, are the clock every certificate is issued
	// and judged by and the leaf lifetime and renewal window.
	Now     func() time.Time
	Renewal pki.Renewal
	// BootstrapWindow is BOOTSTRAP_WINDOW (0: progress.DefaultWindow).
	BootstrapWindow time.Duration
	// Artifacts is the configured artifact set with its pins (nil:
	// PinnedArtifacts, every file of the default versions pinned).
	Artifacts *bundle.Artifacts
}

// PinnedArtifacts is the default artifact set with a made-up pin for every
// file of the default versions on every architecture (the digest of its
// name), so founding never refuses for want of pins.
func PinnedArtifacts() bundle.Artifacts {
	a := bundle.DefaultArtifacts()
	a.SHA256 = map[string]string{}
	for _, f := range a.Files(bundle.DefaultKubernetesVersion, "") {
		sum := sha256.Sum256([]byte(f.Name))
		a.SHA256[f.Name] = hex.EncodeToString(sum[:])
	}
	return a
}

// Stack is k8sapi in-process.
type Stack struct {
	Founder *founding.Service
	Bundles *nodebootstrap.Service // GetBundleFunction's bundle and renewal use cases
	Server  *api.Server
	// Handler serves the routes of every function the stack has use cases
	// for, each through its own function's handler, as the gateway does.
	Handler http.Handler
}

// functions are the functions whose use cases New wires.
var functions = []string{"CreateClusterFunction", "ClustersFunction", "GetBundleFunction"}

// New builds the stack.
func New(cfg Config) (*Stack, error) {
	renderer, err := bundle.NewRenderer()
	if err != nil {
		return nil, err
	}
	st := store.New(cfg.Pool)
	var topologies nodebootstrap.Topologies = st
	if cfg.WrapTopologies != nil {
		topologies = cfg.WrapTopologies(st)
	}
	artifacts := PinnedArtifacts()
	if cfg.Artifacts != nil {
		artifacts = *cfg.Artifacts
	}
	founder := &founding.Service{
		Store: st, Envelope: cfg.Envelope, Renderer: renderer, Log: cfg.Log,
		Compute: compute.NewHTTP(cfg.SimURL+"/compute", cfg.SimClient),
		DNS:     dns.NewHTTP(cfg.SimURL+"/dns", cfg.SimClient),
		Settings: founding.Settings{
			BaseDNSDomain: cfg.BaseDomain, BootstrapBaseURL: cfg.BootstrapBaseURL, KubernetesVersion: bundle.DefaultKubernetesVersion,
			ServiceCIDR: founding.DefaultServiceCIDR, PodCIDR: founding.DefaultPodCIDR, ClusterDomain: founding.DefaultClusterDomain,
			LeafLifetime: cfg.Renewal.Lifetime, Artifacts: artifacts,
		},
		Now: cfg.Now,
	}
	if cfg.Renewal == (pki.Renewal{}) {
		cfg.Renewal = pki.DefaultRenewal()
	}
	window := cmp.Or(cfg.BootstrapWindow, progress.DefaultWindow)
	nodes := &nodebootstrap.Service{Store: topologies, Renewer: st, Phases: st, Envelope: cfg.Envelope, Renderer: renderer,
		Artifacts: artifacts, Renewal: cfg.Renewal, Window: window, Now: cfg.Now, Log: cfg.Log}
	srv := &api.Server{
		Auth: &auth.Authenticator{Tokens: st, Now: cfg.Now}, Founder: founder, Clusters: founder, Log: cfg.Log,
		Progress: &progress.Service{Store: st}, Bundles: nodes, Renewals: nodes,
		Nodes:  &progress.Nodes{Store: st, Window: window, Now: cfg.Now},
		Limits: &vmlimit.Limiter{Store: st, Now: cfg.Now},
	}
	mux := http.NewServeMux()
	for _, fn := range functions {
		h := srv.Handler(fn)
		for _, r := range api.Routes {
			if r.Function == fn {
				mux.Handle(r.Method+" "+r.Path, h)
			}
		}
	}
	return &Stack{Founder: founder, Bundles: nodes, Server: srv, Handler: mux}, nil
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
