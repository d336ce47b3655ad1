package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
)

// Config is the process configuration as typed values, each parsed and
// checked once by FromLookup. A zero value means "not set" for variables
// without a default; the table in variables.go says which have one.
type Config struct {
	DatabaseURL      string // local: a plain DSN
	DBSecretARN      string // AWS: Secrets Manager secret with RDS-style JSON
	KMSKeyID         string
	ComputeAPIURL    string
	DNSAPIURL        string
	BaseDNSDomain    string
	BootstrapBaseURL string
	// BootstrapWindow is how long a node's bundle may be fetched after
	// founding or a re-open (progress.Window).
	BootstrapWindow time.Duration
	// VMCallBudgetFactor multiplies every per-VM budget of the VM routes
	// (internal/vmlimit): 1 in every deployment; a load benchmark on one
	// machine raises it.
	VMCallBudgetFactor int
	KubernetesVersion  string
	LogLevel           slog.Level
	// LocalRun is true only for the local stack and tests: it allows an
	// http BOOTSTRAP_BASE_URL and a database connection that does not
	// verify the server.
	LocalRun bool
	// Artifacts are where nodes download from, configurable for air-gapped
	// installs, with the published-digest fallback and the registry's
	// scheme. Their defaults are the bundle's (artifacts.Default),
	// the one place upstream sources and versions are written.
	// NodeArtifacts adds the manifest's pins.
	Artifacts artifacts.Set
	// ArtifactManifestFile replaces the manifest of pins k8sapi ships
	// (artifacts.ShippedManifest) with an operator's.
	ArtifactManifestFile string
	DB                   DB
	// k8sapi's own platform credential, for the reconciler only: the token
	// itself (local), or the Secrets Manager secret holding it (AWS).
	ServiceToken          string
	ServiceTokenSecretARN string
	// LeafCertLifetime and CertRenewBefore make the LeafSchedule; a zero
	// CertRenewBefore means a third of the lifetime.
	LeafCertLifetime time.Duration
	CertRenewBefore  time.Duration
	// EtcdSnapshotBucket is the S3 bucket of the clusters' etcd snapshots
	// (GetBundleFunction presigns uploads to it and HEADs them).
	EtcdSnapshotBucket string
	// EtcdSnapshotNodeEndpoint is the object store's endpoint as the nodes
	// reach it, used only in the URLs presigned for them (the signature
	// covers the host they call); empty: the endpoint k8sapi itself uses.
	EtcdSnapshotNodeEndpoint string
	// DebugCounters adds each response's DB round trips and KMS calls as
	// headers (internal/metrics): local stacks and benchmarks only.
	DebugCounters bool
	// CADistrustWait shortens a CA rotation's wait between its signing and
	// its distrust (usecase.Settings.CADistrustWait; 0: the default, the
	// longest admin kubeconfig's life): local stacks and the node proof
	// only, where no kubeconfig issued before the rotation is kept.
	CADistrustWait time.Duration
	// ControlPlaneDNSTTLSeconds is the TTL of the control-plane name's
	// record k8sapi writes (usecase.Settings.DNSTTL): how long a client
	// may keep resolving a node the name moved off, so how long a CA
	// rotation waits before it restarts that node (docs/CA-ROTATION.md).
	ControlPlaneDNSTTLSeconds int
}

// FromEnv reads the process environment.
func FromEnv() (Config, error) { return FromLookup(os.LookupEnv) }

// FromLookup reads configuration through lookup (os.LookupEnv in
// production, a map in tests), reporting every problem at once, each
// prefixed by its variable's name. An empty value counts as unset, because
// SAM declares every variable and leaves the unused ones empty.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	c := Config{Artifacts: artifacts.Default()} // versions no variable sets stay upstream's
	var errs []error
	for _, v := range everyVariable {
		if err := c.load(v, lookup); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.name, err))
		}
	}
	if c.DatabaseURL == "" && c.DBSecretARN == "" {
		errs = append(errs, errors.New("DATABASE_URL or DB_SECRET_ARN: one is required"))
	}
	if err := c.checkRenewalWindow(); err != nil {
		errs = append(errs, err)
	}
	if !c.LocalRun {
		errs = append(errs, deployedRules(c)...)
	}
	return c, errors.Join(errs...)
}

// load sets v's field from the environment, else from v's default.
func (c *Config) load(v variable, lookup func(string) (string, bool)) error {
	text, _ := lookup(v.name)
	if text = strings.TrimSpace(text); text == "" {
		text = v.def
	}
	if text == "" {
		return nil
	}
	return v.load(c, text)
}

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

// Require reports every named variable that is not set, so each function
// states what it needs (e.g. cfg.Require("KMS_KEY_ID", "COMPUTE_API_URL")).
func (c Config) Require(names ...string) error {
	var errs []error
	for _, name := range names {
		v, ok := lookupVariable(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: not a configuration variable", name))
			continue
		}
		if !v.set(c) {
			errs = append(errs, fmt.Errorf("%s: required", name))
		}
	}
	return errors.Join(errs...)
}

// NodeArtifacts is the artifact set clusters are founded with: Artifacts
// with the pins of ARTIFACT_MANIFEST_FILE (else the manifest k8sapi ships).
// A manifest that cannot be read or parsed is an error.
func (c Config) NodeArtifacts() (artifacts.Set, error) {
	pins, err := c.artifactManifest()
	if err != nil {
		return artifacts.Set{}, err
	}
	a := c.Artifacts
	a.SHA256 = pins
	return a, nil
}

func (c Config) artifactManifest() (map[string]string, error) {
	if c.ArtifactManifestFile == "" {
		return artifacts.ShippedManifest()
	}
	text, err := os.ReadFile(c.ArtifactManifestFile)
	if err != nil {
		return nil, fmt.Errorf("ARTIFACT_MANIFEST_FILE: %w", err)
	}
	pins, err := artifacts.ParseManifest(string(text))
	if err != nil {
		return nil, fmt.Errorf("ARTIFACT_MANIFEST_FILE %s: %w", c.ArtifactManifestFile, err)
	}
	return pins, nil
}
