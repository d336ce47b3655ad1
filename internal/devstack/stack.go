package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/devstack/gateway"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/devstack/proc"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/vmstandin"
)

// Names of the local stack's resources.
const (
	LocalDatabase  = "k8sapi_local"
	LocalSecret    = "k8sapi/local/db"
	localTokenTTL  = 30 * 24 * time.Hour
	StackEnvFile   = "stack.env"
	SAMEnvFile     = "env.json" // the same overrides as a `sam local --env-vars` file
	defaultAPIPort = 3000       // the port `sam local start-api` uses
)

// Options configure Run.
type Options struct {
	Root        string       // module root: template.yaml, functions/
	LocalDir    string       // scratch (binaries, throwaway Postgres, stack.env); "" means Root/.local
	Database    string       // database on the server; "" means k8sapi_local, or k8sapi_local_<port> off port 3000
	Port        int          // gateway port on 127.0.0.1; 0 means 3000
	Log         *slog.Logger // the stack's own log
	Out         io.Writer    // the summary
	FunctionOut io.Writer    // the functions' stdout and stderr
	// BootVMs makes each VM the simulator creates boot as a stand-in
	// (internal/vmstandin): it fetches its bundle and reports its phases,
	// so a cluster becomes ready with no VMs played by hand. Off, the
	// bootstrap stays pending until someone plays them (docs/API-WALKTHROUGH.md).
	BootVMs bool
}

// Stack is what Run has started, for the summary and .local/stack.env.
type Stack struct {
	APIURL, DatabaseURL, SimURL, AWSEndpointURL, KMSKeyID, DBSecretARN string
	DevToken, DevTokenOrg2                                             string
	// SnapshotBucket is the etcd snapshots' bucket in moto's S3.
	SnapshotBucket string
	// ServiceToken is k8sapi's own platform credential, given only to the
	// scheduled functions (the reconciler).
	ServiceToken string
}

// cleanup is a stack of stop functions run in reverse order.
type cleanup struct {
	mu    sync.Mutex
	funcs []func()
}

func (c *cleanup) add(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.funcs = append(c.funcs, f)
}

func (c *cleanup) run() {
	c.mu.Lock()
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for i := len(funcs) - 1; i >= 0; i-- {
		funcs[i]()
	}
}

// Run starts the whole local stack and serves until ctx ends, then stops
// everything it started. It returns early with the first error, having
// stopped what it had started.
func Run(ctx context.Context, opt Options) error { return run(ctx, opt, nil) }

func run(ctx context.Context, opt Options, ready func(Stack)) error {
	b := newBoot(opt)
	defer b.stops.run()
	for _, step := range b.steps() {
		b.log.Debug("local stack: " + step.name)
		b.gateway.At(step.name)
		if err := step.run(ctx); errors.Is(err, errStoppedWhileStarting) {
			return nil
		} else if err != nil {
			return err
		}
	}
	printSummary(opt.Out, b.st, b.tmpl, b.envPath, opt.BootVMs)
	if ready != nil {
		ready(b.st)
	}
	<-ctx.Done()
	b.log.Info("stopping the local stack")
	return nil
}

// boot is a local stack on its way up: what each step has started, for the
// steps after it. Every stop function goes on stops as soon as its part runs,
// so a failing step leaves nothing behind.
type boot struct {
	opt       Options
	local     string // scratch directory
	log       *slog.Logger
	stops     cleanup
	tmpl      *samtemplate.Template
	gateway   gateway.Starting  // what the gateway port serves from the moment it is taken
	bins      map[string]string // function binaries by logical id
	serverDSN string            // the PostgreSQL server
	dsn       string            // the stack's database on it
	endpoint  string            // moto
	pool      *pgxpool.Pool     // the simulator's
	invokers  map[string]lambdaruntime.Invoker
	st        Stack
	envPath   string
}

// errStoppedWhileStarting ends the steps quietly: Ctrl-C before the stack
// was up is not a failure.
var errStoppedWhileStarting = errors.New("stopped while starting")

func newBoot(opt Options) *boot {
	if opt.Port == 0 {
		opt.Port = defaultAPIPort
	}
	if opt.Database == "" {
		opt.Database = databaseFor(opt.Port)
	}
	local := opt.LocalDir
	if local == "" {
		local = filepath.Join(opt.Root, ".local")
	}
	return &boot{opt: opt, local: local, log: opt.Log}
}

// databaseFor is the database of the stack on port: each port its own, so
// a second stack never reads or migrates the first one's.
func databaseFor(port int) string {
	if port == defaultAPIPort {
		return LocalDatabase
	}
	return LocalDatabase + "_" + strconv.Itoa(port)
}

// bootStep is one named step of the start.
type bootStep struct {
	name string
	run  func(context.Context) error
}

// steps are the stack's start, in order.
func (b *boot) steps() []bootStep {
	return []bootStep{
		{"reading template.yaml", b.loadTemplate},
		{"taking the gateway port", b.takeGatewayPort},
		{"building functions, starting PostgreSQL and moto", b.startSlowParts},
		{"creating and migrating the database", b.prepareDatabase},
		{"creating the KMS key and the database secret", b.prepareAWS},
		{"starting the simulator", b.startSimulator},
		{"seeding the dev tokens", b.seedTokens},
		{"starting the functions", b.startFunctions},
		{"serving the gateway", b.serveGateway},
		{"running the scheduled functions", b.runSchedules},
		{"writing stack.env and env.json", b.writeEnvFiles},
	}
}

func (b *boot) loadTemplate(context.Context) (err error) {
	b.tmpl, err = samtemplate.LoadTemplate(filepath.Join(b.opt.Root, "template.yaml"))
	return err
}

// takeGatewayPort comes first after the template: if the port is busy, the
// stack fails before any work.
func (b *boot) takeGatewayPort(context.Context) error {
	apiAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.opt.Port))
	l, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return fmt.Errorf("gateway port %d is busy (another make local?): %w", b.opt.Port, err)
	}
	b.st.APIURL = "http://" + apiAddr
	srv := &http.Server{Handler: &b.gateway, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	b.stops.add(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return nil
}

// startSlowParts runs the slow parts side by side: compiling, PostgreSQL,
// moto. The first failure cancels the others, so a missing dependency is
// reported at once rather than after a compile.
func (b *boot) startSlowParts(ctx context.Context) error {
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	var wg sync.WaitGroup
	var buildErr, pgErr, motoErr error
	wg.Go(func() {
		b.log.Info("building functions (host bootstrap binaries)")
		if b.bins, buildErr = lambdaruntime.BuildFunctions(startCtx, b.opt.Root, b.tmpl, filepath.Join(b.local, "bin")); buildErr != nil {
			cancelStart()
		}
	})
	// A server part answers its address and its stop, which goes on stops.
	server := func(start func(context.Context, string, *slog.Logger) (string, func(), error), dir string, addr *string, err *error) {
		wg.Go(func() {
			var stop func()
			if *addr, stop, *err = start(startCtx, filepath.Join(b.local, dir), b.log); *err != nil {
				cancelStart()
				return
			}
			b.stops.add(stop)
		})
	}
	server(localpg.EnsurePostgres, "pg", &b.serverDSN, &pgErr)
	server(localaws.StartMoto, "moto", &b.endpoint, &motoErr)
	wg.Wait()
	// A missing dependency is the most useful thing to say; say it first.
	if err := firstError(pgErr, motoErr, buildErr); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errStoppedWhileStarting
	}
	return nil
}

func (b *boot) prepareDatabase(ctx context.Context) (err error) {
	if b.dsn, err = localpg.CreateDatabase(ctx, b.serverDSN, b.opt.Database); err != nil {
		return err
	}
	b.st.DatabaseURL = b.dsn
	if err := localpg.ApplyMigrations(ctx, b.dsn, true); err != nil {
		return err
	}
	return localpg.EnsureFunctionLogins(ctx, b.dsn)
}

// prepareAWS makes moto hold what AWS holds in production: the KMS key,
// the database secret and the etcd snapshots' bucket.
func (b *boot) prepareAWS(ctx context.Context) (err error) {
	awsCfg := localaws.AWSConfig(b.endpoint)
	b.st.AWSEndpointURL = b.endpoint
	if b.st.KMSKeyID, err = localaws.CreateKMSKey(ctx, awsCfg, localaws.LocalKeyAlias); err != nil {
		return err
	}
	if err = localaws.CreateBucket(ctx, awsCfg, localaws.LocalSnapshotBucket, b.st.KMSKeyID); err != nil {
		return err
	}
	b.st.SnapshotBucket = localaws.LocalSnapshotBucket
	secret, err := localaws.DBSecretFromDSN(b.dsn)
	if err != nil {
		return err
	}
	b.st.DBSecretARN, err = localaws.PutDBSecret(ctx, awsCfg, LocalSecret, secret)
	return err
}

func (b *boot) startSimulator(ctx context.Context) (err error) {
	if b.pool, err = pgxpool.New(ctx, b.dsn); err != nil {
		return fmt.Errorf("connecting the simulator: %w", err)
	}
	b.stops.add(b.pool.Close)
	simURL, stopSim, err := StartSimulator(b.pool, b.log, vmstandin.Config{APIBaseURL: b.standInAPIURL()})
	if err != nil {
		return err
	}
	b.stops.add(stopSim)
	b.st.SimURL = simURL
	return nil
}

func (b *boot) seedTokens(ctx context.Context) (err error) {
	if b.st.DevToken, err = simulator.IssuePrincipalToken(ctx, b.pool, 1, simulator.ScopePrincipal, localTokenTTL); err != nil {
		return fmt.Errorf("seeding the org 1 token: %w", err)
	}
	if b.st.DevTokenOrg2, err = simulator.IssuePrincipalToken(ctx, b.pool, 2, simulator.ScopePrincipal, localTokenTTL); err != nil {
		return fmt.Errorf("seeding the org 2 token: %w", err)
	}
	if b.st.ServiceToken, err = simulator.IssuePrincipalToken(ctx, b.pool, 0, simulator.ScopeService, localTokenTTL); err != nil {
		return fmt.Errorf("seeding the service token: %w", err)
	}
	return nil
}

// runSchedules invokes the scheduled functions every LocalSchedule until
// the stack stops.
func (b *boot) runSchedules(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	b.stops.add(cancel)
	lambdaruntime.RunSchedules(ctx, b.tmpl, b.invokers, lambdaruntime.LocalSchedule, b.log)
	return nil
}

// startFunctions gives each function a fleet of execution environments,
// one warm process each to begin with: the first request pays no process
// start, and concurrent requests run side by side, as in Lambda.
func (b *boot) startFunctions(context.Context) error {
	b.invokers = map[string]lambdaruntime.Invoker{}
	var fleets []*lambdaruntime.Fleet
	b.stops.add(func() { closeFleets(fleets) })
	for _, f := range b.tmpl.Functions {
		env, err := FunctionEnv(f, b.st)
		if err != nil {
			return err
		}
		spec := lambdaruntime.FunctionSpec{Function: f, Binary: b.bins[f.LogicalID], Env: env}
		fleet := lambdaruntime.NewFleet(func() (*lambdaruntime.Runner, error) {
			// A writer per process: each buffers its own partial line.
			return lambdaruntime.NewRunner(spec, b.log, lambdaruntime.NewPrefixWriter(b.opt.FunctionOut, f.LogicalID+" | "))
		}, lambdaruntime.MaxEnvironments)
		fleets = append(fleets, fleet)
		if err := fleet.Warm(); err != nil {
			return err
		}
		b.invokers[f.LogicalID] = fleet
	}
	return nil
}

func closeFleets(fleets []*lambdaruntime.Fleet) {
	var runners []*lambdaruntime.Runner
	for _, f := range fleets {
		runners = append(runners, f.Runners()...)
	}
	lambdaruntime.CloseAll(runners)
}

func (b *boot) serveGateway(context.Context) error {
	gw, err := gateway.NewGateway(b.tmpl, b.invokers, b.log)
	if err != nil {
		return err
	}
	b.gateway.Ready(gw)
	return nil
}

// writeEnvFiles writes stack.env and env.json, removed again when the stack
// stops: a stopped stack must not look running.
func (b *boot) writeEnvFiles(context.Context) error {
	b.envPath = filepath.Join(b.local, StackEnvFile)
	if err := writeStackEnv(b.envPath, b.st); err != nil {
		return err
	}
	samEnvPath := filepath.Join(b.local, SAMEnvFile)
	if err := writeSAMEnv(samEnvPath, b.tmpl, b.st); err != nil {
		return err
	}
	b.stops.add(func() { _ = os.Remove(b.envPath); _ = os.Remove(samEnvPath) })
	return nil
}

// standInAPIURL is where the simulator's stand-in VMs reach k8sapi: where
// its functions tell VMs to (BOOTSTRAP_BASE_URL); "" when VMs do not boot.
func (b *boot) standInAPIURL() string {
	if !b.opt.BootVMs {
		return ""
	}
	return b.st.APIURL
}

func printSummary(w io.Writer, st Stack, t *samtemplate.Template, envPath string, bootVMs bool) {
	fmt.Fprintf(w, "\nk8sapi local stack is up (Ctrl-C stops everything)\n\n")
	fmt.Fprintf(w, "  API          %s\n", st.APIURL)
	for _, f := range t.Functions {
		for _, r := range f.Routes {
			fmt.Fprintf(w, "                 %-40s -> %s\n", r.Key(), f.LogicalID)
		}
	}
	fmt.Fprintf(w, "  simulator    %s  (Excloud compute, DNS, IMDS: SIMULATED)\n", st.SimURL)
	fmt.Fprintf(w, "  postgres     %s\n", st.DatabaseURL)
	fmt.Fprintf(w, "  moto (AWS)   %s  KMS key %s, snapshot bucket %s\n", st.AWSEndpointURL, st.KMSKeyID, st.SnapshotBucket)
	fmt.Fprintf(w, "  DEV_TOKEN    %s  (org 1)\n", st.DevToken)
	fmt.Fprintf(w, "  DEV_TOKEN_ORG2 %s  (org 2)\n\n", st.DevTokenOrg2)
	fmt.Fprintf(w, "  try: curl -s %s/health\n", st.APIURL)
	fmt.Fprintf(w, "  scripts: . %s\n", envPath)
	fmt.Fprintf(w, "  sam local: --env-vars %s\n\n", filepath.Join(filepath.Dir(envPath), SAMEnvFile))
	fmt.Fprintf(w, "  VMs          %s\n\n", vmsLine(bootVMs))
	printCLI(w, envPath)
}

// vmsLine says whether the simulator's VMs boot, and what follows.
func vmsLine(bootVMs bool) string {
	if bootVMs {
		return "boot as stand-ins (BOOT_VMS=1): each fetches its bundle, reports its phases, renews its certificates\n" +
			"               and takes the etcd snapshots it is asked for; nothing runs on a machine (internal/vmstandin)"
	}
	return "do not boot: a cluster's bootstrap stays pending until its VMs are played by hand\n" +
		"               (docs/API-WALKTHROUGH.md); make local BOOT_VMS=1 boots them as stand-ins"
}

// printCLI is how to get the operator's CLI and point it at this stack:
// built into the stack's scratch directory, its URL and token from
// stack.env.
func printCLI(w io.Writer, envPath string) {
	bin := filepath.Join(filepath.Dir(envPath), "bin")
	path := bin
	if !filepath.IsAbs(bin) {
		path = "$PWD/" + bin
	}
	fmt.Fprintf(w, "  CLI          go build -o %s/k8sapi ./cmd/k8sapi && export PATH=\"%s:$PATH\"\n", bin, path)
	fmt.Fprintf(w, "               . %s && export K8SAPI_URL=$API_URL K8SAPI_TOKEN=$DEV_TOKEN\n", envPath)
	fmt.Fprintf(w, "               k8sapi create cluster --image 1 --instance-type c1.large --subnet 1 --wait   (README.md, Quick start)\n\n")
}

func firstError(errs ...error) error {
	var missing *proc.MissingDependencyError
	for _, err := range errs {
		if errors.As(err, &missing) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
