// Package wiring builds a function's dependencies once per cold start, from
// configuration to use cases, so each functions/<name>/main.go is a few
// lines. Nothing here runs per request.
package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/awssecret"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/lambdaserve"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Data keys stay unwrapped in a warm container for at most this long and
// this many uses (see internal/envelope's Cache).
const (
	dataKeyMaxAge  = 5 * time.Minute
	dataKeyMaxUses = 1000
	dataKeyEntries = 256
)

// platformTimeout bounds each call to the compute and DNS APIs.
const platformTimeout = 20 * time.Second

// App is one function's process-wide state.
type App struct {
	Config config.Config
	Log    *slog.Logger
	AWS    aws.Config
	Store  *store.Store
	// Leaves is the configured leaf lifetime and renewal window.
	Leaves pki.LeafSchedule
	// Artifacts is the configured artifact set with its manifest's pins:
	// what a cluster founded now records (config.NodeArtifacts).
	Artifacts artifacts.Set
	draining  atomic.Bool
}

// Load reads configuration, connects the pool (lazily: no connection is made
// until the first query) and starts watching for SIGTERM (draining).
func Load(ctx context.Context, required ...string) (*App, error) {
	cfg, err := config.FromEnv()
	if err == nil {
		err = cfg.Require(required...)
	}
	var nodeArtifacts artifacts.Set
	if err == nil {
		nodeArtifacts, err = cfg.NodeArtifacts()
	}
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(log)
	dsn, awsCfg, err := awssecret.DatabaseFromEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pool, err := store.OpenPool(ctx, dsn, poolSettings(cfg.DB, awsCfg))
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Log: log, AWS: awsCfg, Store: store.New(pool), Leaves: cfg.LeafSchedule(), Artifacts: nodeArtifacts}
	a.watchSIGTERM()
	return a, nil
}

// poolSettings is the configured pool shape, with an IAM auth token per
// connection when DB_IAM_AUTH is on.
func poolSettings(p config.DB, awsCfg aws.Config) store.PoolSettings {
	s := store.PoolSettings{
		MaxConns: p.MaxConns, ConnMaxLifetime: p.ConnMaxLifetime, StatementTimeout: p.StatementTimeout,
		QueryExecMode: p.QueryExecMode, Tracer: metrics.QueryTracer{},
	}
	if p.IAMAuth {
		s.Password = config.DBAuthToken(awsCfg)
	}
	return s
}

// watchSIGTERM marks the function draining when the runtime asks it to stop,
// so /health answers 418 and a load balancer stops sending.
func (a *App) watchSIGTERM() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		a.draining.Store(true)
		a.Log.Info("draining")
	}()
}

// Server returns an api.Server with what every function shares.
func (a *App) Server() *api.Server {
	return &api.Server{
		Auth:     &auth.Authenticator{Tokens: a.Store},
		Draining: a.draining.Load,
		Log:      a.Log,
		// A local and benchmark switch, deliberately not a template.yaml
		// parameter: the access log carries the counts in every deployment.
		DebugCounters: a.Config.DebugCounters,
	}
}

// KMS returns the KMS client.
func (a *App) KMS() *kms.Client { return kms.NewFromConfig(a.AWS) }

// Envelope returns the envelope sealer with a warm-container data key cache.
func (a *App) Envelope() *envelope.Envelope {
	return envelope.New(metrics.CountKMS(kmsCallsOf(a.KMS())), a.Config.KMSKeyID, envelope.NewCache(dataKeyMaxAge, dataKeyMaxUses, dataKeyEntries))
}

// UseCases returns the dependencies of the operator use cases (package
// usecase). r renders userdata and admin kubeconfigs; deleting needs it
// too (a VM whose create answer was lost is found by repeating the
// create). env is the envelope the function's key policy allows:
// Envelope, OpeningEnvelope or ClosedEnvelope.
func (a *App) UseCases(r *bundle.Renderer, env *envelope.Envelope) *usecase.Deps {
	hc := &http.Client{Timeout: platformTimeout}
	return &usecase.Deps{
		Store: a.Store, Envelope: env, Renderer: r, Log: a.Log,
		Compute: compute.NewHTTP(a.Config.ComputeAPIURL, hc),
		DNS:     dns.NewHTTP(a.Config.DNSAPIURL, hc),
		Settings: usecase.Settings{
			BaseDNSDomain: a.Config.BaseDNSDomain, BootstrapBaseURL: a.Config.BootstrapBaseURL,
			KubernetesVersion: a.Config.KubernetesVersion,
			ServiceCIDR:       usecase.DefaultServiceCIDR, PodCIDR: usecase.DefaultPodCIDR,
			ClusterDomain: usecase.DefaultClusterDomain, LeafLifetime: a.Leaves.Lifetime,
			Artifacts: a.Artifacts, CADistrustWait: a.Config.CADistrustWait, DNSTTL: a.Config.ControlPlaneDNSTTLSeconds,
		},
	}
}

// OpeningEnvelope is Envelope for a function that only opens data keys
// (GetBundleFunction, ReconcilerFunction: their key policy statements grant
// Decrypt alone): Decrypt is one signed request, not the SDK's KMS
// client (kmsdecrypt.go says why).
func (a *App) OpeningEnvelope() *envelope.Envelope {
	calls := kmsCalls{generate: refuseGenerate, decrypt: kmsDecryptCall(a.AWS, &http.Client{Timeout: platformTimeout})}
	return envelope.New(metrics.CountKMS(calls), a.Config.KMSKeyID, envelope.NewCache(dataKeyMaxAge, dataKeyMaxUses, dataKeyEntries))
}

// ClosedEnvelope is the envelope of a function the key policy grants no
// KMS use (ClustersFunction: template.yaml names it in no statement). It
// refuses both calls here, as KMS would, and links no KMS client.
func (a *App) ClosedEnvelope() *envelope.Envelope {
	calls := kmsCalls{generate: refuseGenerate, decrypt: refuseDecrypt}
	return envelope.New(metrics.CountKMS(calls), a.Config.KMSKeyID, envelope.NewCache(dataKeyMaxAge, dataKeyMaxUses, dataKeyEntries))
}

// NodeBootstrap returns the bundle use case; it opens data keys only.
func (a *App) NodeBootstrap(r *bundle.Renderer) *nodebootstrap.Service {
	return &nodebootstrap.Service{Store: a.Store, Renewer: a.Store, CRLs: a.Store, Memberships: a.Store, Steps: a.Store, Envelope: a.OpeningEnvelope(), Renderer: r,
		Artifacts: a.Artifacts, Leaves: a.Leaves, Window: a.Config.BootstrapWindow, Log: a.Log}
}

// SnapshotBucket is the etcd snapshots' bucket (ETCD_SNAPSHOT_BUCKET), at
// the SDK's endpoint and with the function's own credentials: a presigned
// URL carries the function's identity, and names the store as the nodes
// reach it (ETCD_SNAPSHOT_NODE_ENDPOINT).
func (a *App) SnapshotBucket() *objectstore.Bucket {
	return &objectstore.Bucket{AWS: a.AWS, Name: a.Config.EtcdSnapshotBucket, NodeEndpoint: a.Config.EtcdSnapshotNodeEndpoint}
}

// Nodes returns the operator's view and re-open of a node's bootstrap.
func (a *App) Nodes() *progress.Nodes {
	return &progress.Nodes{Store: a.Store, Window: a.Config.BootstrapWindow}
}

// ServiceToken is k8sapi's own platform credential (the reconciler's):
// SERVICE_TOKEN locally, else the Secrets Manager secret at
// SERVICE_TOKEN_SECRET_ARN, fetched once per cold start.
func (a *App) ServiceToken(ctx context.Context) (string, error) {
	if a.Config.ServiceToken != "" {
		return a.Config.ServiceToken, nil
	}
	if a.Config.ServiceTokenSecretARN == "" {
		return "", fmt.Errorf("configuration: SERVICE_TOKEN or SERVICE_TOKEN_SECRET_ARN is required")
	}
	token, err := awssecret.New(a.AWS).SecretString(ctx, a.Config.ServiceTokenSecretARN)
	if err != nil {
		return "", fmt.Errorf("reading the service token secret: %w", err)
	}
	if token == "" {
		return "", fmt.Errorf("the service token secret is empty")
	}
	return token, nil
}

// HealthChecks are the deep health check's pings, Postgres and KMS, each
// answered from memory for deepCheckTTL after it runs.
func (a *App) HealthChecks() []api.Check {
	kmsClient := a.KMS()
	keyID := a.Config.KMSKeyID
	return cached([]api.Check{
		{Name: "postgres", Ping: a.Store.Ping},
		{Name: "kms", Ping: func(ctx context.Context) error {
			_, err := kmsClient.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: &keyID})
			return err
		}},
	}, deepCheckTTL, time.Now)
}

// Serve is a function's whole main: load the App (failing the cold start
// if a required variable is missing), let configure set the function's use
// cases on its Server, and serve function's routes for the Lambda runtime.
func Serve(function api.Function, required []string, configure func(*App, *api.Server) error) {
	app, err := Load(context.Background(), required...)
	if err != nil {
		Fatal(err)
	}
	srv := app.Server()
	if err := configure(app, srv); err != nil {
		Fatal(err)
	}
	lambdaserve.Start(srv.Handler(function))
}

// Fatal logs why a cold start failed and exits non-zero, which Lambda
// reports as an init error.
func Fatal(err error) {
	slog.Error("cold start failed", "error", err.Error())
	os.Exit(1)
}
