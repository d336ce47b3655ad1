package config

import (
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
)

// variable is one environment variable: its name, its default, and how its
// text becomes a typed field of Config.
type variable struct {
	name string
	def  string
	// load parses the text, holds it to the variable's rule and stores the
	// typed value; on an error the field keeps its zero value.
	load func(c *Config, text string) error
	// set reports whether the field holds a value other than its zero (Require).
	set func(c Config) bool
	// local marks a switch only local stacks and benchmarks set, so
	// template.yaml does not declare it.
	local bool
}

// field is the row of a variable whose text parse turns into a value of at.
func field[T comparable](name, def string, at func(*Config) *T, parse func(string) (T, error)) variable {
	return variable{
		name: name, def: def,
		load: func(c *Config, text string) error {
			v, err := parse(text)
			if err == nil {
				*at(c) = v
			}
			return err
		},
		set: func(c Config) bool { var zero T; return *at(&c) != zero },
	}
}

// localSwitch is v, marked as a variable template.yaml does not declare.
func (v variable) localSwitch() variable { v.local = true; return v }

// upstream is where the artifact variables' defaults come from.
var upstream = bundle.DefaultArtifacts()

var (
	webURL    = checked(checkURL("http", "https"))
	positive  = durationIn(time.Nanosecond, 0, "must be a positive duration like 10s or 5m")
	leafLife  = durationIn(minLeafLifetime, 0, "must be a duration of at least "+minLeafLifetime.String()+" like 8760h")
	windowLen = durationIn(minWindow, maxWindow, "must be a duration from 1m to 24h, like 1h or 30m")
	budget    = wholeNumber(1, maxBudgetFactor)
	poolConns = wholeNumber[int32](1, maxPoolConns)
	version   = checked(checkVersion)
	absPath   = checked(checkAbsPath)
	arn       = checked(checkARN)
	anyText   = checked(nil)
)

// variables is the truth of what the service reads from its environment,
// each once, at start; template.yaml declares each but the local switches
// for every function and docs/ARCHITECTURE.md documents each (tests hold
// all three equal).
var variables = []variable{
	field("DATABASE_URL", "", func(c *Config) *string { return &c.DatabaseURL }, anyText),
	field("DB_SECRET_ARN", "", func(c *Config) *string { return &c.DBSecretARN }, arn),
	field("KMS_KEY_ID", "", func(c *Config) *string { return &c.KMSKeyID }, anyText),
	field("COMPUTE_API_URL", "", func(c *Config) *string { return &c.ComputeAPIURL }, webURL),
	field("DNS_API_URL", "", func(c *Config) *string { return &c.DNSAPIURL }, webURL),
	field("BASE_DNS_DOMAIN", "k8s.excloud.co.in", func(c *Config) *string { return &c.BaseDNSDomain }, checked(checkDomain)),
	field("BOOTSTRAP_BASE_URL", "", func(c *Config) *string { return &c.BootstrapBaseURL }, webURL),
	field("LOCAL_RUN", "false", func(c *Config) *bool { return &c.LocalRun }, boolean),
	field("BOOTSTRAP_WINDOW", "1h", func(c *Config) *time.Duration { return &c.BootstrapWindow }, windowLen),
	field("VM_CALL_BUDGET_FACTOR", "1", func(c *Config) *int { return &c.VMCallBudgetFactor }, budget),
	field("KUBERNETES_VERSION", bundle.DefaultKubernetesVersion, func(c *Config) *string { return &c.KubernetesVersion }, version),
	field("ETCD_VERSION", upstream.EtcdVersion, func(c *Config) *string { return &c.Artifacts.EtcdVersion }, version),
	field("LOG_LEVEL", "info", func(c *Config) *slog.Level { return &c.LogLevel }, logLevel),
	field("KUBE_DOWNLOAD_BASE", upstream.KubeDownloadBase, func(c *Config) *string { return &c.Artifacts.KubeDownloadBase }, webURL),
	field("ETCD_DOWNLOAD_BASE", upstream.EtcdDownloadBase, func(c *Config) *string { return &c.Artifacts.EtcdDownloadBase }, webURL),
	field("HELM_DOWNLOAD_BASE", upstream.HelmDownloadBase, func(c *Config) *string { return &c.Artifacts.HelmDownloadBase }, webURL),
	field("CONTAINERD_DOWNLOAD_BASE", upstream.ContainerdDownloadBase, func(c *Config) *string { return &c.Artifacts.ContainerdDownloadBase }, webURL),
	field("RUNC_DOWNLOAD_BASE", upstream.RuncDownloadBase, func(c *Config) *string { return &c.Artifacts.RuncDownloadBase }, webURL),
	field("CNI_PLUGINS_DOWNLOAD_BASE", upstream.CNIPluginsDownloadBase, func(c *Config) *string { return &c.Artifacts.CNIPluginsDownloadBase }, webURL),
	field("CILIUM_CHART", upstream.CiliumChart, func(c *Config) *string { return &c.Artifacts.CiliumChart }, checked(checkURL("oci", "https", "http"))),
	field("IMAGE_REGISTRY", upstream.ImageRegistry, func(c *Config) *string { return &c.Artifacts.ImageRegistry }, checked(checkRegistry)),
	field("IMAGE_REGISTRY_PLAIN_HTTP", "false", func(c *Config) *bool { return &c.Artifacts.ImageRegistryPlainHTTP }, boolean),
	field("ARTIFACT_MANIFEST_FILE", "", func(c *Config) *string { return &c.ArtifactManifestFile }, absPath),
	field("ARTIFACT_DIGEST_FALLBACK", "false", func(c *Config) *bool { return &c.Artifacts.DigestFallback }, boolean),
	field("SERVICE_TOKEN", "", func(c *Config) *string { return &c.ServiceToken }, anyText),
	field("SERVICE_TOKEN_SECRET_ARN", "", func(c *Config) *string { return &c.ServiceTokenSecretARN }, arn),
	field("DB_PROXY_ENDPOINT", "", func(c *Config) *string { return &c.DB.ProxyEndpoint }, checked(checkHost)),
	field("DB_CA_BUNDLE", "", func(c *Config) *string { return &c.DB.CABundle }, absPath),
	field("DB_IAM_AUTH", "false", func(c *Config) *bool { return &c.DB.IAMAuth }, boolean),
	field("DB_MAX_CONNS", "", func(c *Config) *int32 { return &c.DB.MaxConns }, poolConns),
	field("DB_CONN_MAX_LIFETIME", "", func(c *Config) *time.Duration { return &c.DB.ConnMaxLifetime }, positive),
	field("DB_STATEMENT_TIMEOUT", "", func(c *Config) *time.Duration { return &c.DB.StatementTimeout }, positive),
	field("DB_QUERY_EXEC_MODE", "", func(c *Config) *string { return &c.DB.QueryExecMode }, checked(checkQueryExecMode)),
	field("LEAF_CERT_LIFETIME", pki.DefaultLeafLifetime.String(), func(c *Config) *time.Duration { return &c.LeafCertLifetime }, leafLife),
	field("CERT_RENEW_BEFORE", "", func(c *Config) *time.Duration { return &c.CertRenewBefore }, positive),
	field("K8SAPI_DEBUG_COUNTERS", "false", func(c *Config) *bool { return &c.DebugCounters }, boolean).localSwitch(),
}

// Variables lists the names of every variable a deployment sets (each
// function's environment in template.yaml), in table order: all FromEnv
// reads but the local switches.
func Variables() []string {
	var names []string
	for _, v := range variables {
		if !v.local {
			names = append(names, v.name)
		}
	}
	return names
}

func lookupVariable(name string) (variable, bool) {
	for _, v := range variables {
		if v.name == name {
			return v, true
		}
	}
	return variable{}, false
}
