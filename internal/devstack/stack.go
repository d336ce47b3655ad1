package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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
	// bootstrap stays pending until someone plays them (README).
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

// Env is the stack as KEY=VALUE pairs, in a fixed order.
func (s Stack) Env() [][2]string {
	return [][2]string{
		{"API_URL", s.APIURL},
		{"DATABASE_URL", s.DatabaseURL},
		{"SIM_URL", s.SimURL},
		{"AWS_ENDPOINT_URL", s.AWSEndpointURL},
		{"AWS_REGION", LocalRegion},
		{"AWS_ACCESS_KEY_ID", LocalAccessKey},
		{"AWS_SECRET_ACCESS_KEY", LocalSecretKey},
		{"KMS_KEY_ID", s.KMSKeyID},
		{"DB_SECRET_ARN", s.DBSecretARN},
		{"ETCD_SNAPSHOT_BUCKET", s.SnapshotBucket},
		{"DEV_TOKEN", s.DevToken},
		{"DEV_TOKEN_ORG2", s.DevTokenOrg2},
		// For tools that start a scheduled function themselves against the
		// running stack (make invoke, the benchmark's cold starts): with
		// FunctionEnv they give it what the stack gives it.
		{"SERVICE_TOKEN", s.ServiceToken},
	}
}

// StackFromEnv is the stack that Env (a stack.env file) describes.
func StackFromEnv(env map[string]string) Stack {
	return Stack{APIURL: env["API_URL"], DatabaseURL: env["DATABASE_URL"], SimURL: env["SIM_URL"],
		AWSEndpointURL: env["AWS_ENDPOINT_URL"], KMSKeyID: env["KMS_KEY_ID"], DBSecretARN: env["DB_SECRET_ARN"],
		SnapshotBucket: env["ETCD_SNAPSHOT_BUCKET"],
		DevToken:       env["DEV_TOKEN"], DevTokenOrg2: env["DEV_TOKEN_ORG2"], ServiceToken: env["SERVICE_TOKEN"]}
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
		b.gateway.at(step.name)
		if err := step.run(ctx); errors.Is(err, errStoppedWhileStarting) {
			return nil
		} else if err != nil {
			return err
		}
	}
	printSummary(opt.Out, b.st, b.tmpl, b.envPath)
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
	tmpl      *Template
	gateway   startingGateway   // what the gateway port serves from the moment it is taken
	bins      map[string]string // function binaries by logical id
	serverDSN string            // the PostgreSQL server
	dsn       string            // the stack's database on it
	endpoint  string            // moto
	pool      *pgxpool.Pool     // the simulator's
	invokers  map[string]Invoker
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
	b.tmpl, err = LoadTemplate(filepath.Join(b.opt.Root, "template.yaml"))
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
		if b.bins, buildErr = BuildFunctions(startCtx, b.opt.Root, b.tmpl, filepath.Join(b.local, "bin")); buildErr != nil {
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
	server(EnsurePostgres, "pg", &b.serverDSN, &pgErr)
	server(StartMoto, "moto", &b.endpoint, &motoErr)
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
	if b.dsn, err = CreateDatabase(ctx, b.serverDSN, b.opt.Database); err != nil {
		return err
	}
	b.st.DatabaseURL = b.dsn
	if err := ApplyMigrations(ctx, b.dsn, true); err != nil {
		return err
	}
	return EnsureFunctionLogins(ctx, b.dsn)
}

// prepareAWS makes moto hold what AWS holds in production: the KMS key,
// the database secret and the etcd snapshots' bucket.
func (b *boot) prepareAWS(ctx context.Context) (err error) {
	awsCfg := AWSConfig(b.endpoint)
	b.st.AWSEndpointURL = b.endpoint
	if b.st.KMSKeyID, err = CreateKMSKey(ctx, awsCfg, LocalKeyAlias); err != nil {
		return err
	}
	if err = CreateBucket(ctx, awsCfg, LocalSnapshotBucket, b.st.KMSKeyID); err != nil {
		return err
	}
	b.st.SnapshotBucket = LocalSnapshotBucket
	secret, err := DBSecretFromDSN(b.dsn)
	if err != nil {
		return err
	}
	b.st.DBSecretARN, err = PutDBSecret(ctx, awsCfg, LocalSecret, secret)
	return err
}

func (b *boot) startSimulator(ctx context.Context) (err error) {
	if b.pool, err = pgxpool.New(ctx, b.dsn); err != nil {
		return fmt.Errorf("connecting the simulator: %w", err)
	}
	b.stops.add(b.pool.Close)
	simURL, stopSim, err := StartSimulator(b.pool, b.log, b.standInAPIURL())
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
	RunSchedules(ctx, b.tmpl, b.invokers, LocalSchedule, b.log)
	return nil
}

// startFunctions gives each function a fleet of execution environments,
// one warm process each to begin with: the first request pays no process
// start, and concurrent requests run side by side, as in Lambda.
func (b *boot) startFunctions(context.Context) error {
	b.invokers = map[string]Invoker{}
	var fleets []*Fleet
	b.stops.add(func() { closeFleets(fleets) })
	for _, f := range b.tmpl.Functions {
		env, err := FunctionEnv(f, b.st)
		if err != nil {
			return err
		}
		spec := FunctionSpec{Function: f, Binary: b.bins[f.LogicalID], Env: env}
		fleet := NewFleet(func() (*Runner, error) {
			// A writer per process: each buffers its own partial line.
			return NewRunner(spec, b.log, NewPrefixWriter(b.opt.FunctionOut, f.LogicalID+" | "))
		}, MaxEnvironments)
		fleets = append(fleets, fleet)
		if err := fleet.Warm(); err != nil {
			return err
		}
		b.invokers[f.LogicalID] = fleet
	}
	return nil
}

func closeFleets(fleets []*Fleet) {
	var runners []*Runner
	for _, f := range fleets {
		runners = append(runners, f.Runners()...)
	}
	closeAll(runners)
}

func (b *boot) serveGateway(context.Context) error {
	gw, err := NewGateway(b.tmpl, b.invokers, b.log)
	if err != nil {
		return err
	}
	b.gateway.ready(gw)
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

// FunctionEnv is the environment the local stack gives function f: the
// overrides every function gets, its own database user (a member of its
// role only, migration 011; EnsureFunctionLogins made it), and the service
// token for a scheduled function only (no API function gets it).
func FunctionEnv(f Function, st Stack) (map[string]string, error) {
	env := FunctionOverrides(st)
	dsn, err := FunctionDSN(st.DatabaseURL, f.LogicalID)
	if err != nil {
		return nil, err
	}
	env["DATABASE_URL"] = dsn
	if f.Schedule != 0 {
		env["SERVICE_TOKEN"] = st.ServiceToken
	}
	return env, nil
}

// FunctionOverrides is the environment the local stack gives every function
// on top of template.yaml's (what `sam local --env-vars` would carry).
func FunctionOverrides(st Stack) map[string]string {
	env := map[string]string{
		"DATABASE_URL":          st.DatabaseURL,
		"DB_SECRET_ARN":         st.DBSecretARN,
		"KMS_KEY_ID":            st.KMSKeyID,
		"ETCD_SNAPSHOT_BUCKET":  st.SnapshotBucket,
		"AWS_ENDPOINT_URL":      st.AWSEndpointURL,
		"AWS_REGION":            LocalRegion,
		"AWS_DEFAULT_REGION":    LocalRegion,
		"AWS_ACCESS_KEY_ID":     LocalAccessKey,
		"AWS_SECRET_ACCESS_KEY": LocalSecretKey,
		"COMPUTE_API_URL":       st.SimURL + "/compute",
		"DNS_API_URL":           st.SimURL + "/dns",
		"BOOTSTRAP_BASE_URL":    st.APIURL,
		// Plain http and an unverified database connection: local only.
		"LOCAL_RUN": "true",
		// The simulator's VMs download nothing (nothing runs their bundle's
		// prerequisites), and the manifest k8sapi ships may pin nothing yet:
		// founding would refuse without this. A proof whose VMs do download
		// passes its own manifest and false through (passedThrough).
		"ARTIFACT_DIGEST_FALLBACK": "true",
		// Each response says its DB round trips and KMS calls (internal/metrics).
		"K8SAPI_DEBUG_COUNTERS": "1",
	}
	maps.Copy(env, PassedThrough(os.LookupEnv))
	return env
}

// passedThrough are the variables `make local` takes from its own
// environment for every function, so a short-lived stack is one command
// (LEAF_CERT_LIFETIME=1h CERT_RENEW_BEFORE=59m45s make local), and so is a
// stack whose clusters download from a mirror (KUBE_DOWNLOAD_BASE=... make
// local), as the node proof founds its clusters, and one whose nodes reach
// moto's S3 at another address than the host's loopback
// (ETCD_SNAPSHOT_NODE_ENDPOINT).
var passedThrough = []string{"LEAF_CERT_LIFETIME", "CERT_RENEW_BEFORE", "VM_CALL_BUDGET_FACTOR",
	"KUBE_DOWNLOAD_BASE", "ETCD_DOWNLOAD_BASE", "ETCD_VERSION", "HELM_DOWNLOAD_BASE",
	"CONTAINERD_DOWNLOAD_BASE", "RUNC_DOWNLOAD_BASE", "CNI_PLUGINS_DOWNLOAD_BASE", "CILIUM_CHART",
	"IMAGE_REGISTRY", "IMAGE_REGISTRY_PLAIN_HTTP", "ARTIFACT_MANIFEST_FILE", "ARTIFACT_DIGEST_FALLBACK",
	"ETCD_SNAPSHOT_NODE_ENDPOINT"}

// PassedThrough returns the passed-through variables lookup has a value for.
func PassedThrough(lookup func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, name := range passedThrough {
		if v, ok := lookup(name); ok && v != "" {
			out[name] = v
		}
	}
	return out
}

// standInAPIURL is where the simulator's stand-in VMs reach k8sapi: where
// its functions tell VMs to (BOOTSTRAP_BASE_URL); "" when VMs do not boot.
func (b *boot) standInAPIURL() string {
	if !b.opt.BootVMs {
		return ""
	}
	return b.st.APIURL
}

// StartSimulator serves the platform simulator on a free loopback port,
// its VMs booting as stand-ins that reach k8sapi at apiURL unless it is "".
func StartSimulator(pool *pgxpool.Pool, log *slog.Logger, apiURL string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator: %w", err)
	}
	url = "http://" + l.Addr().String()
	cfg := simulator.Config{DB: pool, Logger: log.With("component", "simulator")}
	closePlayer := func() {}
	if apiURL != "" {
		player := vmstandin.New(vmstandin.Config{IMDSBaseURL: url + "/imds", APIBaseURL: apiURL, Log: log.With("component", "stand-in vm")})
		cfg.Created, closePlayer = player.Boot, player.Close
	}
	sim, err := simulator.New(cfg)
	if err != nil {
		_ = l.Close()
		closePlayer()
		return "", nil, err
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return url, func() {
		closePlayer() // first: no stand-in calls a simulator that is going
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

func writeStackEnv(path string, st Stack) error {
	var b strings.Builder
	b.WriteString("# Written by make local while the stack runs; removed when it stops.\n")
	for _, kv := range st.Env() {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// 0600: it holds bearer tokens.
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeSAMEnv writes the overrides in the --env-vars format of sam local:
// what every function gets under "Parameters", and under each function's
// logical id what is its own (its database user, the service token).
func writeSAMEnv(path string, tmpl *Template, st Stack) error {
	overrides := FunctionOverrides(st)
	delete(overrides, "DATABASE_URL") // each function's own, never the owner's to all
	file := map[string]map[string]string{"Parameters": overrides}
	for _, f := range tmpl.Functions {
		env, err := FunctionEnv(f, st)
		if err != nil {
			return err
		}
		file[f.LogicalID] = ownEnv(env, overrides)
	}
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ownEnv is what env sets differently from shared.
func ownEnv(env, shared map[string]string) map[string]string {
	own := map[string]string{}
	for k, v := range env {
		if sv, ok := shared[k]; !ok || sv != v {
			own[k] = v
		}
	}
	return own
}

// ReadStackEnv reads a stack.env file into a map.
func ReadStackEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

func printSummary(w io.Writer, st Stack, t *Template, envPath string) {
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
}

// closeAll stops the functions side by side: each may take its grace period.
func closeAll(runners []*Runner) {
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(r.Close)
	}
	wg.Wait()
}

func firstError(errs ...error) error {
	var missing *MissingDependencyError
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
