package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
)

// Config is the process configuration. Empty strings mean "not set" for
// variables without a default.
type Config struct {
	DatabaseURL      string // local: a plain DSN
	DBSecretARN      string // AWS: Secrets Manager secret with RDS-style JSON
	KMSKeyID         string
	ComputeAPIURL    string
	DNSAPIURL        string
	BaseDNSDomain    string
	BootstrapBaseURL string
	// BootstrapWindow is how long a node's bundle may be fetched after
	// founding or a re-open (progress.Window); see BootstrapWindowLength.
	BootstrapWindow string
	// VMCallBudgetFactor multiplies every per-VM budget of the VM routes
	// (internal/vmlimit): 1 in every deployment; a load benchmark on one
	// machine raises it.
	VMCallBudgetFactor string
	KubernetesVersion  string
	LogLevel           string // debug, info, warn or error; see SlogLevel
	// LocalRun is "true" only for the local stack and tests: it allows an
	// http BOOTSTRAP_BASE_URL and a database connection that does not
	// verify the server (see IsLocal).
	LocalRun string
	// Artifacts are where nodes download from, configurable for air-gapped
	// installs. Their defaults are the bundle's (bundle.DefaultArtifacts),
	// the one place upstream sources and versions are written.
	Artifacts bundle.Artifacts
	// ArtifactManifestFile replaces the manifest of pins k8sapi ships
	// (bundle.ShippedManifest) with an operator's; ArtifactDigestFallback
	// "true" lets nodes trust the digest published beside a file no pin
	// covers; ImageRegistryPlainHTTP "true" pulls images over plain HTTP.
	// NodeArtifacts puts them together.
	ArtifactManifestFile   string
	ArtifactDigestFallback string
	ImageRegistryPlainHTTP string
	DB                     DB
	// k8sapi's own platform credential, for the reconciler only: the token
	// itself (local), or the Secrets Manager secret holding it (AWS).
	ServiceToken          string
	ServiceTokenSecretARN string
	// LeafCertLifetime and CertRenewBefore are Go durations (see LeafSchedule);
	// empty CertRenewBefore means a third of the lifetime.
	LeafCertLifetime string
	CertRenewBefore  string
}

// DB shapes the connection pool (see DB.Pool for the typed values). Empty
// means the store's default, which is the shape behind RDS Proxy.
type DB struct {
	ProxyEndpoint string // connect here instead of the secret's host (RDS Proxy)
	// CABundle is a PEM file of the CAs the database's certificate chains
	// to (the RDS CA bundle, packaged with the function); empty: the
	// system's roots, which hold RDS Proxy's (Amazon Trust Services).
	CABundle         string
	IAMAuth          string // "true": an RDS IAM auth token per connection instead of the password
	MaxConns         string
	ConnMaxLifetime  string
	StatementTimeout string
	QueryExecMode    string // exec or simple_protocol: neither creates named prepared statements
}

// upstream is where the artifact variables' defaults come from.
var upstream = bundle.DefaultArtifacts()

// variable is one environment variable: its default and where it lands.
type variable struct {
	name  string
	def   string
	field func(*Config) *string
	check func(string) error // nil: any value
}

// variables is the truth of what the service reads from its environment;
// template.yaml declares each of them for every function (a test holds the
// two equal).
var variables = []variable{
	{"DATABASE_URL", "", func(c *Config) *string { return &c.DatabaseURL }, nil},
	{"DB_SECRET_ARN", "", func(c *Config) *string { return &c.DBSecretARN }, checkARN},
	{"KMS_KEY_ID", "", func(c *Config) *string { return &c.KMSKeyID }, nil},
	{"COMPUTE_API_URL", "", func(c *Config) *string { return &c.ComputeAPIURL }, checkURL("http", "https")},
	{"DNS_API_URL", "", func(c *Config) *string { return &c.DNSAPIURL }, checkURL("http", "https")},
	{"BASE_DNS_DOMAIN", "k8s.excloud.co.in", func(c *Config) *string { return &c.BaseDNSDomain }, checkDomain},
	{"BOOTSTRAP_BASE_URL", "", func(c *Config) *string { return &c.BootstrapBaseURL }, checkURL("http", "https")},
	{"LOCAL_RUN", "false", func(c *Config) *string { return &c.LocalRun }, checkBool},
	{"BOOTSTRAP_WINDOW", "1h", func(c *Config) *string { return &c.BootstrapWindow }, checkWindow},
	{"VM_CALL_BUDGET_FACTOR", "1", func(c *Config) *string { return &c.VMCallBudgetFactor }, checkBudgetFactor},
	{"KUBERNETES_VERSION", bundle.DefaultKubernetesVersion, func(c *Config) *string { return &c.KubernetesVersion }, checkVersion},
	{"ETCD_VERSION", upstream.EtcdVersion, func(c *Config) *string { return &c.Artifacts.EtcdVersion }, checkVersion},
	{"LOG_LEVEL", "info", func(c *Config) *string { return &c.LogLevel }, checkLogLevel},
	{"KUBE_DOWNLOAD_BASE", upstream.KubeDownloadBase, func(c *Config) *string { return &c.Artifacts.KubeDownloadBase }, checkURL("http", "https")},
	{"ETCD_DOWNLOAD_BASE", upstream.EtcdDownloadBase, func(c *Config) *string { return &c.Artifacts.EtcdDownloadBase }, checkURL("http", "https")},
	{"HELM_DOWNLOAD_BASE", upstream.HelmDownloadBase, func(c *Config) *string { return &c.Artifacts.HelmDownloadBase }, checkURL("http", "https")},
	{"CONTAINERD_DOWNLOAD_BASE", upstream.ContainerdDownloadBase, func(c *Config) *string { return &c.Artifacts.ContainerdDownloadBase }, checkURL("http", "https")},
	{"RUNC_DOWNLOAD_BASE", upstream.RuncDownloadBase, func(c *Config) *string { return &c.Artifacts.RuncDownloadBase }, checkURL("http", "https")},
	{"CNI_PLUGINS_DOWNLOAD_BASE", upstream.CNIPluginsDownloadBase, func(c *Config) *string { return &c.Artifacts.CNIPluginsDownloadBase }, checkURL("http", "https")},
	{"CILIUM_CHART", upstream.CiliumChart, func(c *Config) *string { return &c.Artifacts.CiliumChart }, checkURL("oci", "https", "http")},
	{"IMAGE_REGISTRY", upstream.ImageRegistry, func(c *Config) *string { return &c.Artifacts.ImageRegistry }, checkRegistry},
	{"IMAGE_REGISTRY_PLAIN_HTTP", "false", func(c *Config) *string { return &c.ImageRegistryPlainHTTP }, checkBool},
	{"ARTIFACT_MANIFEST_FILE", "", func(c *Config) *string { return &c.ArtifactManifestFile }, checkAbsPath},
	{"ARTIFACT_DIGEST_FALLBACK", "false", func(c *Config) *string { return &c.ArtifactDigestFallback }, checkBool},
	{"SERVICE_TOKEN", "", func(c *Config) *string { return &c.ServiceToken }, nil},
	{"SERVICE_TOKEN_SECRET_ARN", "", func(c *Config) *string { return &c.ServiceTokenSecretARN }, checkARN},
	{"DB_PROXY_ENDPOINT", "", func(c *Config) *string { return &c.DB.ProxyEndpoint }, checkHost},
	{"DB_CA_BUNDLE", "", func(c *Config) *string { return &c.DB.CABundle }, checkAbsPath},
	{"DB_IAM_AUTH", "false", func(c *Config) *string { return &c.DB.IAMAuth }, checkBool},
	{"DB_MAX_CONNS", "", func(c *Config) *string { return &c.DB.MaxConns }, checkMaxConns},
	{"DB_CONN_MAX_LIFETIME", "", func(c *Config) *string { return &c.DB.ConnMaxLifetime }, checkDuration},
	{"DB_STATEMENT_TIMEOUT", "", func(c *Config) *string { return &c.DB.StatementTimeout }, checkDuration},
	{"DB_QUERY_EXEC_MODE", "", func(c *Config) *string { return &c.DB.QueryExecMode }, checkQueryExecMode},
	{"LEAF_CERT_LIFETIME", pki.DefaultLeafLifetime.String(), func(c *Config) *string { return &c.LeafCertLifetime }, checkLeafLifetime},
	{"CERT_RENEW_BEFORE", "", func(c *Config) *string { return &c.CertRenewBefore }, checkDuration},
}

// Variables lists the names of every variable FromEnv reads, in table order.
func Variables() []string {
	names := make([]string, len(variables))
	for i, v := range variables {
		names[i] = v.name
	}
	return names
}

// FromEnv reads the process environment.
func FromEnv() (Config, error) { return FromLookup(os.LookupEnv) }

// FromLookup reads configuration through lookup (os.LookupEnv in
// production, a map in tests). An empty value counts as unset, because SAM
// declares every variable and leaves the unused ones empty.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	c := Config{Artifacts: bundle.DefaultArtifacts()} // versions no variable sets stay upstream's
	var errs []error
	for _, v := range variables {
		val, _ := lookup(v.name)
		val = strings.TrimSpace(val)
		if val == "" {
			val = v.def
		}
		if val != "" && v.check != nil {
			if err := v.check(val); err != nil {
				// The value is not echoed: some variables carry credentials.
				errs = append(errs, fmt.Errorf("%s: %w", v.name, err))
			}
		}
		*v.field(&c) = val
	}
	if c.DatabaseURL == "" && c.DBSecretARN == "" {
		errs = append(errs, errors.New("DATABASE_URL or DB_SECRET_ARN: one is required"))
	}
	if err := c.checkRenewalWindow(); err != nil {
		errs = append(errs, err)
	}
	if !c.IsLocal() {
		errs = append(errs, deployedRules(c)...)
	}
	return c, errors.Join(errs...)
}

// IsLocal reports whether this is a local run (LOCAL_RUN=true).
func (c Config) IsLocal() bool { return c.LocalRun == "true" }

// deployedRules are what every run but a local one must hold: VMs fetch
// their keys over HTTPS only, and the database is reached over TLS that
// verifies the server (DatabaseDSN adds verify-full to a secret's DSN).
func deployedRules(c Config) []error {
	var errs []error
	if u, err := url.Parse(c.BootstrapBaseURL); c.BootstrapBaseURL != "" && (err != nil || u.Scheme != "https") {
		errs = append(errs, errors.New("BOOTSTRAP_BASE_URL: must be https outside local runs (LOCAL_RUN=true)"))
	}
	if u, err := url.Parse(c.DatabaseURL); c.DatabaseURL != "" && (err != nil || u.Query().Get("sslmode") != verifyFull) {
		errs = append(errs, errors.New("DATABASE_URL: must set sslmode=verify-full outside local runs (LOCAL_RUN=true)"))
	}
	return errs
}

// Require reports every named variable that is empty, so each function
// states what it needs (e.g. cfg.Require("KMS_KEY_ID", "COMPUTE_API_URL")).
func (c Config) Require(names ...string) error {
	var errs []error
	for _, name := range names {
		v, ok := lookupVariable(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: not a configuration variable", name))
			continue
		}
		if *v.field(&c) == "" {
			errs = append(errs, fmt.Errorf("%s: required", name))
		}
	}
	return errors.Join(errs...)
}

// NodeArtifacts is the artifact set clusters are founded with: Artifacts
// with the pins of ARTIFACT_MANIFEST_FILE (else the manifest k8sapi ships),
// whether the published-digest fallback is allowed, and the registry's
// scheme. A manifest that cannot be read or parsed is an error.
func (c Config) NodeArtifacts() (bundle.Artifacts, error) {
	pins, err := c.artifactManifest()
	if err != nil {
		return bundle.Artifacts{}, err
	}
	a := c.Artifacts
	a.SHA256 = pins
	// FromLookup has refused values ParseBool does not take.
	a.DigestFallback, _ = strconv.ParseBool(c.ArtifactDigestFallback)
	a.ImageRegistryPlainHTTP, _ = strconv.ParseBool(c.ImageRegistryPlainHTTP)
	return a, nil
}

func (c Config) artifactManifest() (map[string]string, error) {
	if c.ArtifactManifestFile == "" {
		return bundle.ShippedManifest()
	}
	text, err := os.ReadFile(c.ArtifactManifestFile)
	if err != nil {
		return nil, fmt.Errorf("ARTIFACT_MANIFEST_FILE: %w", err)
	}
	pins, err := bundle.ParseManifest(string(text))
	if err != nil {
		return nil, fmt.Errorf("ARTIFACT_MANIFEST_FILE %s: %w", c.ArtifactManifestFile, err)
	}
	return pins, nil
}

// SlogLevel is LogLevel as a slog.Level (info if unparseable, which FromEnv
// has already reported).
func (c Config) SlogLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return slog.LevelInfo
	}
	return l
}

func lookupVariable(name string) (variable, bool) {
	for _, v := range variables {
		if v.name == name {
			return v, true
		}
	}
	return variable{}, false
}

func checkURL(schemes ...string) func(string) error {
	return func(s string) error {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return fmt.Errorf("must be an absolute URL (%s)", strings.Join(schemes, ", "))
		}
		for _, scheme := range schemes {
			if u.Scheme == scheme {
				return nil
			}
		}
		return fmt.Errorf("scheme must be one of %s", strings.Join(schemes, ", "))
	}
}

var (
	versionRE  = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	domainRE   = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	registryRE = regexp.MustCompile(`^[a-z0-9.-]+(:\d+)?(/[a-z0-9._/-]+)?$`)
)

func checkVersion(s string) error {
	if !versionRE.MatchString(s) {
		return errors.New("must look like v1.2.3")
	}
	return nil
}

func checkDomain(s string) error {
	if len(s) > 253 || !domainRE.MatchString(s) {
		return errors.New("must be a lower-case DNS domain like k8s.example.com")
	}
	return nil
}

func checkRegistry(s string) error {
	if !registryRE.MatchString(s) {
		return errors.New("must be a registry host[:port][/path] without a scheme")
	}
	return nil
}

func checkLogLevel(s string) error {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return nil
	}
	return errors.New("must be debug, info, warn or error")
}

// Bounds of BOOTSTRAP_WINDOW: a VM needs minutes to boot and fetch; a
// window of more than a day is a standing credential, not a bootstrap.
const (
	minWindow = time.Minute
	maxWindow = 24 * time.Hour
)

func checkWindow(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < minWindow || d > maxWindow {
		return errors.New("must be a duration from 1m to 24h, like 1h or 30m")
	}
	return nil
}

// maxBudgetFactor bounds VM_CALL_BUDGET_FACTOR: a load benchmark on one
// machine drives a few VMs hard; more than that is no budget at all.
const maxBudgetFactor = 1000

func checkBudgetFactor(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 1 || n > maxBudgetFactor {
		return fmt.Errorf("must be a whole number from 1 to %d", maxBudgetFactor)
	}
	return nil
}

// BudgetFactor is VM_CALL_BUDGET_FACTOR as a number (1 when unset).
func (c Config) BudgetFactor() int {
	if n, err := strconv.Atoi(c.VMCallBudgetFactor); err == nil && n > 0 {
		return n
	}
	return 1
}

// BootstrapWindowLength is BOOTSTRAP_WINDOW as a duration (the default when
// the Config was not loaded by FromLookup, which has already refused values
// that do not parse).
func (c Config) BootstrapWindowLength() time.Duration {
	if d, err := time.ParseDuration(c.BootstrapWindow); err == nil && d > 0 {
		return d
	}
	return progress.DefaultWindow
}

func checkAbsPath(s string) error {
	if !strings.HasPrefix(s, "/") {
		return errors.New("must be an absolute file path")
	}
	return nil
}

func checkARN(s string) error {
	if !strings.HasPrefix(s, "arn:") {
		return errors.New("must be an ARN")
	}
	return nil
}
