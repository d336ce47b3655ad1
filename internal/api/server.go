package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/carotation"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/requestid"
	"github.com/excloud/k8sapi/internal/trail"
	"github.com/excloud/k8sapi/internal/upgrade"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 64 << 10

// Authenticator proves who calls.
type Authenticator interface {
	Operator(ctx context.Context, authorization string) (auth.Principal, error)
	ProveVM(ctx context.Context, vmID int64, imdsToken, authorization string, count *vmlimit.Count) (auth.BootstrapVM, *vmlimit.Window, error)
}

var _ Authenticator = (*auth.Authenticator)(nil)

// Founder founds clusters (POST /clusters).
type Founder interface {
	Found(ctx context.Context, org auth.Principal, bearer string, req clusterspec.Request, idempotencyKey string) (*cluster.Result, error)
}

// Clusters reads, deletes and re-sets an org's clusters.
type Clusters interface {
	List(ctx context.Context, org auth.Principal, q cluster.ListQuery) (apitypes.ClusterList, error)
	Get(ctx context.Context, org auth.Principal, id int64) (apitypes.ClusterView, error)
	Delete(ctx context.Context, org auth.Principal, bearer string, id int64) (apitypes.ClusterView, error)
	KeepSpec(ctx context.Context, org auth.Principal, id int64, f apitypes.ClusterFile) (apitypes.ClusterView, error)
	SetRemediation(ctx context.Context, org auth.Principal, id int64, ch clusterspec.RemediationChange) (apitypes.ClusterView, string, error)
	Catalog(ctx context.Context, org auth.Principal, bearer string) (apitypes.Catalog, error)
}

// KubeconfigIssuer issues an operator's admin kubeconfigs
// (POST /clusters/{id}/kubeconfig) and exec credentials over the
// operator's own key (POST /clusters/{id}/credentials): it opens the
// cluster CA.
type KubeconfigIssuer interface {
	IssueKubeconfig(ctx context.Context, org auth.Principal, id int64, req adminkubeconfig.KubeconfigRequest) (*apitypes.IssuedKubeconfig, error)
	IssueCredential(ctx context.Context, org auth.Principal, id int64, req apitypes.CredentialRequest) (*apitypes.IssuedCredential, error)
}

// NodePools adds, lists, scales and removes a cluster's worker pools.
type NodePools interface {
	CreatePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, req clusterspec.PoolRequest, idempotencyKey string) (nodepool.PoolResult, error)
	Pools(ctx context.Context, org auth.Principal, clusterID int64) ([]apitypes.NodePool, error)
	Pool(ctx context.Context, org auth.Principal, clusterID int64, name string) (apitypes.NodePool, error)
	ScalePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string, req clusterspec.ScaleRequest) (nodepool.PoolResult, error)
	DeletePool(ctx context.Context, org auth.Principal, bearer string, clusterID int64, name string) (nodepool.PoolResult, error)
}

var _ NodePools = (*nodepool.Service)(nil)

// NodeReplacements records the replacement of a control-plane node; the
// reconciler drives it.
type NodeReplacements interface {
	ReplaceNode(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeReplacement, error)
}

var _ NodeReplacements = (*controlplane.Service)(nil)

// ControlPlaneScalings records a scaling of a cluster's control plane; the
// reconciler drives it.
type ControlPlaneScalings interface {
	ScaleControlPlane(ctx context.Context, org auth.Principal, clusterID int64, patch clusterspec.ClusterPatch) (apitypes.ControlPlaneScaling, error)
}

var _ ControlPlaneScalings = (*controlplane.Service)(nil)

// Upgrades plans, records, resumes and aborts a cluster's upgrade; the
// reconciler drives it.
type Upgrades interface {
	Upgrade(ctx context.Context, org auth.Principal, clusterID int64, req apitypes.UpgradeRequest) (apitypes.UpgradeAnswer, error)
	Current(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error)
	Resume(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error)
	Abort(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error)
}

var _ Upgrades = (*upgrade.Service)(nil)

// CARotations records and aborts a cluster's CA rotation; the reconciler
// drives it.
type CARotations interface {
	Rotate(ctx context.Context, org auth.Principal, clusterID int64, req apitypes.RotateCARequest) (apitypes.CARotation, error)
	Abort(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.CARotation, error)
}

var _ CARotations = (*carotation.Service)(nil)

// KubeconfigLog lists the recorded issues of a cluster's admin kubeconfigs.
type KubeconfigLog interface {
	Kubeconfigs(ctx context.Context, org auth.Principal, id int64) ([]apitypes.KubeconfigIssue, error)
}

var (
	_ KubeconfigIssuer = (*adminkubeconfig.Service)(nil)
	_ KubeconfigLog    = (*adminkubeconfig.Service)(nil)
)

// AuditRecorder appends an event to its cluster's trail when the cluster is
// the caller's; false: not written (not the caller's cluster).
type AuditRecorder interface {
	RecordAudit(ctx context.Context, e audit.Event) (bool, error)
}

// AuditEvents lists a page of a cluster's trail for its org.
type AuditEvents interface {
	Events(ctx context.Context, org auth.Principal, id int64, q trail.Query) (apitypes.AuditEventList, error)
}

// The store is the AuditRecorder: each function's wiring sets it, which
// checks it is one.
var _ AuditEvents = (*trail.Trail)(nil)

// Bundles renders a VM's bootstrap bundle.
type Bundles interface {
	Bundle(ctx context.Context, vm auth.BootstrapVM) (*bundle.Bundle, error)
}

// EtcdCRLs serves a control-plane node its cluster's current etcd CRL.
type EtcdCRLs interface {
	EtcdCRL(ctx context.Context, vm auth.BootstrapVM) (*nodebootstrap.EtcdCRL, error)
}

// EtcdMemberships tells the control-plane node that removes members of a
// shrinking control plane which, and records each removal it reports.
type EtcdMemberships interface {
	EtcdRemovals(ctx context.Context, vm auth.BootstrapVM) (*nodebootstrap.EtcdRemovals, error)
	ReportEtcdRemoval(ctx context.Context, vm auth.BootstrapVM, r nodebootstrap.EtcdRemovalReport) (nodebootstrap.EtcdRemovalReport, error)
}

// Renewals renews a ready node's certificates.
type Renewals interface {
	Renew(ctx context.Context, vm auth.BootstrapVM, req nodebootstrap.RenewalRequest) (*nodebootstrap.RenewalOutcome, error)
}

// WorkerBootstraps serves a worker's bootstrap: its bundle of facts and
// the signing of the certificate requests its own keys made.
type WorkerBootstraps interface {
	WorkerBundle(ctx context.Context, vm auth.BootstrapVM) (*nodebootstrap.WorkerBundle, error)
	SignWorker(ctx context.Context, vm auth.BootstrapVM, req nodebootstrap.WorkerCSRRequest) (*nodebootstrap.WorkerCertificates, error)
	RenewWorker(ctx context.Context, vm auth.BootstrapVM, req nodebootstrap.WorkerRenewalRequest) (*nodebootstrap.RenewalOutcome, error)
}

var _ WorkerBootstraps = (*nodebootstrap.WorkerService)(nil)

// Reporter records the bootstrap phases VMs report.
type Reporter interface {
	Report(ctx context.Context, vm auth.BootstrapVM, r progress.Report) error
	ReportWorker(ctx context.Context, vm auth.BootstrapVM, r progress.Report) error
}

// HealthReports records the health reports of ready nodes.
type HealthReports interface {
	Report(ctx context.Context, vm auth.BootstrapVM, r nodehealth.Report) (nodehealth.Answer, error)
	ReportWorker(ctx context.Context, vm auth.BootstrapVM, r nodehealth.Report) (nodehealth.Answer, error)
}

var _ HealthReports = (*nodehealth.Service)(nil)

// NodeBootstraps shows and re-opens a node's bootstrap for its operator.
type NodeBootstraps interface {
	Bootstrap(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeBootstrapDetail, error)
	Reopen(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeBootstrapDetail, error)
}

var _ NodeBootstraps = (*progress.Nodes)(nil)

// Limiter says which calls of a VM count against its budget of a route,
// and answers the count.
type Limiter interface {
	Call(route string, b vmlimit.Budget) *vmlimit.Count
	Judge(call *vmlimit.Count, w *vmlimit.Window, b vmlimit.Budget) error
}

var _ Limiter = (*vmlimit.Limiter)(nil)

// nodeAction is what an operator's route on one node does (one of
// NodeBootstraps' methods, NodeReplacements').
type nodeAction[T any] func(ctx context.Context, org auth.Principal, clusterID, vmID int64) (T, error)

// Check is one dependency the deep health check pings.
type Check struct {
	Name string
	Ping func(context.Context) error
}

// Server holds a function's dependencies; a function sets only what its
// routes use.
type Server struct {
	Auth     Authenticator
	Founder  Founder
	Clusters Clusters
	Pools    NodePools
	Replacer NodeReplacements
	Scaler   ControlPlaneScalings
	Upgrades Upgrades
	// Rotations records CA rotations (ClustersFunction: no key opened).
	Rotations CARotations
	Bundles   Bundles
	Renewals  Renewals
	EtcdCRLs  EtcdCRLs
	// EtcdMemberships serves the etcd membership route (GetBundleFunction).
	EtcdMemberships EtcdMemberships
	Workers         WorkerBootstraps
	Progress        Reporter
	Health          HealthReports
	Nodes           NodeBootstraps
	Limits          Limiter
	Docs            Docs
	Checks          []Check
	Draining        func() bool
	// DefaultKubernetesVersion is the deployment's (KUBERNETES_VERSION): a
	// founding without kubernetes_version gets it.
	DefaultKubernetesVersion string
	Log                      *slog.Logger
	// DebugCounters sends each request's DB round trips and KMS calls as
	// response headers (internal/metrics); the access log always has them.
	DebugCounters bool

	// Kubeconfigs issues admin kubeconfigs (CreateClusterFunction, which
	// holds the KMS right to open a cluster CA); KubeconfigLog lists their
	// issues (ClustersFunction, which holds none).
	Kubeconfigs   KubeconfigIssuer
	KubeconfigLog KubeconfigLog

	// Snapshots takes and lists etcd snapshots (ClustersFunction);
	// SnapshotNodes serves the chosen node (GetBundleFunction).
	Snapshots     SnapshotOperator
	SnapshotNodes SnapshotNode

	// Audit appends to a cluster's trail (the functions that serve
	// operators' state-changing routes); Events lists it.
	Audit  AuditRecorder
	Events AuditEvents

	// budgets are the per-VM budgets of the routes Handler serves.
	budgets map[string]vmlimit.Budget
}

// Handler serves fn's routes.
func (s *Server) Handler(fn Function) http.Handler {
	mux := http.NewServeMux()
	if s.budgets == nil {
		// Kept across calls: a test may serve several functions from one
		// Server, and no two functions serve the same route.
		s.budgets = map[string]vmlimit.Budget{}
	}
	var methods []string
	for _, r := range fn.Routes() {
		handle := r.handle
		route := r.Method + " " + r.Path
		s.budgets[route] = r.PerVM
		methods = append(methods, r.Method)
		mux.Handle(route, s.observe(route, s.audited(r, s.screened(func(w http.ResponseWriter, req *http.Request) { handle(s, w, req) }))))
	}
	slices.Sort(methods)
	methods = slices.Compact(methods)
	// Anything else: a JSON 405 or 404, never Go's text page.
	unmatched := s.observe("unmatched", s.screened(func(w http.ResponseWriter, req *http.Request) {
		s.writeError(w, req, unmatchedError(w, mux, methods, req))
	}))
	mux.Handle("/", unmatched)
	// ServeMux answers an unclean path ("//", "/./", "/../") with a bare
	// redirect to its cleaned form; no route of ours has such a path, so it
	// is an unknown route, answered as JSON like any other.
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !cleanPath(req.URL.EscapedPath()) {
			unmatched.ServeHTTP(w, req)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// budgetOf is the per-VM budget of the matched route pattern ("METHOD
// /path", as http.ServeMux reports the one it matched).
func (s *Server) budgetOf(pattern string) vmlimit.Budget { return s.budgets[pattern] }

// statusRecorder remembers the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// observe adds the request id, the body limit, panic recovery and one JSON
// access-log line with route, status and latency (never headers or bodies).
func (s *Server) observe(route string, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		ctx, w := metrics.Begin(req.Context(), w, s.DebugCounters)
		id := requestid.From(ctx)
		if id == "" {
			id = newRequestID()
			ctx = requestid.With(ctx, id)
		}
		req = req.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		req.Body = http.MaxBytesReader(w, req.Body, MaxBodyBytes)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				// The stack is what tells where a nil pointer came from.
				s.logger().ErrorContext(ctx, "handler panic", "request_id", id, "route", route, "panic", fmt.Sprint(p),
					"stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeError(rec, req, fmt.Errorf("panic: %v", p))
				}
			}
			s.logger().InfoContext(ctx, "request", append([]any{"request_id", id, "route", route,
				"status", rec.status, "latency_ms", float64(time.Since(start).Microseconds()) / 1000},
				metrics.LogAttrs(ctx)...)...)
		}()
		next(rec, req)
	})
}

// cleanPath reports whether p is already what ServeMux would clean it to.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
