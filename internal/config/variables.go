package config

import (
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// variable is one environment variable: its name, its default, the typed
// field of Config it lands in, and the parser that turns its text into that
// field's type or says what the text must look like.
type variable struct {
	name  string
	def   string
	field func(*Config) any // a pointer to the field
	parse func(string) (any, error)
}

// load parses text and stores the value; on an error the field keeps its
// zero value. A row whose parser and field disagree on the type panics in
// every test that loads it.
func (v variable) load(c *Config, text string) error {
	val, err := v.parse(text)
	if err == nil {
		reflect.ValueOf(v.field(c)).Elem().Set(reflect.ValueOf(val))
	}
	return err
}

// set reports whether the field holds a value other than its zero (Require).
func (v variable) set(c Config) bool { return !reflect.ValueOf(v.field(&c)).Elem().IsZero() }

// upstream is where the artifact variables' defaults come from.
var upstream = artifacts.Default()

// The parsers several rows share, made once (each is a closure).
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
// each once, at start; template.yaml declares each of them for every
// function and docs/CONFIGURATION.md documents each (tests hold all three
// equal).
var variables = []variable{
	{"DATABASE_URL", "", func(c *Config) any { return &c.DatabaseURL }, anyText},
	{"DB_SECRET_ARN", "", func(c *Config) any { return &c.DBSecretARN }, arn},
	{"KMS_KEY_ID", "", func(c *Config) any { return &c.KMSKeyID }, anyText},
	{"COMPUTE_API_URL", "", func(c *Config) any { return &c.ComputeAPIURL }, webURL},
	{"DNS_API_URL", "", func(c *Config) any { return &c.DNSAPIURL }, webURL},
	{"BASE_DNS_DOMAIN", "k8s.excloud.co.in", func(c *Config) any { return &c.BaseDNSDomain }, checked(checkDomain)},
	{"BOOTSTRAP_BASE_URL", "", func(c *Config) any { return &c.BootstrapBaseURL }, webURL},
	{"LOCAL_RUN", "false", func(c *Config) any { return &c.LocalRun }, boolean},
	{"BOOTSTRAP_WINDOW", "1h", func(c *Config) any { return &c.BootstrapWindow }, windowLen},
	{"VM_CALL_BUDGET_FACTOR", "1", func(c *Config) any { return &c.VMCallBudgetFactor }, budget},
	{"KUBERNETES_VERSION", artifacts.DefaultKubernetesVersion, func(c *Config) any { return &c.KubernetesVersion }, version},
	{"ETCD_VERSION", upstream.EtcdVersion, func(c *Config) any { return &c.Artifacts.EtcdVersion }, version},
	{"LOG_LEVEL", "info", func(c *Config) any { return &c.LogLevel }, logLevel},
	{"KUBE_DOWNLOAD_BASE", upstream.KubeDownloadBase, func(c *Config) any { return &c.Artifacts.KubeDownloadBase }, webURL},
	{"ETCD_DOWNLOAD_BASE", upstream.EtcdDownloadBase, func(c *Config) any { return &c.Artifacts.EtcdDownloadBase }, webURL},
	{"HELM_DOWNLOAD_BASE", upstream.HelmDownloadBase, func(c *Config) any { return &c.Artifacts.HelmDownloadBase }, webURL},
	{"CONTAINERD_DOWNLOAD_BASE", upstream.ContainerdDownloadBase, func(c *Config) any { return &c.Artifacts.ContainerdDownloadBase }, webURL},
	{"RUNC_DOWNLOAD_BASE", upstream.RuncDownloadBase, func(c *Config) any { return &c.Artifacts.RuncDownloadBase }, webURL},
	{"CNI_PLUGINS_DOWNLOAD_BASE", upstream.CNIPluginsDownloadBase, func(c *Config) any { return &c.Artifacts.CNIPluginsDownloadBase }, webURL},
	{"CILIUM_CHART", upstream.CiliumChart, func(c *Config) any { return &c.Artifacts.CiliumChart }, checked(checkURL("oci", "https", "http"))},
	{"IMAGE_REGISTRY", upstream.ImageRegistry, func(c *Config) any { return &c.Artifacts.ImageRegistry }, checked(checkRegistry)},
	{"IMAGE_REGISTRY_PLAIN_HTTP", "false", func(c *Config) any { return &c.Artifacts.ImageRegistryPlainHTTP }, boolean},
	{"ARTIFACT_MANIFEST_FILE", "", func(c *Config) any { return &c.ArtifactManifestFile }, absPath},
	{"ARTIFACT_DIGEST_FALLBACK", "false", func(c *Config) any { return &c.Artifacts.DigestFallback }, boolean},
	{"SERVICE_TOKEN", "", func(c *Config) any { return &c.ServiceToken }, anyText},
	{"SERVICE_TOKEN_SECRET_ARN", "", func(c *Config) any { return &c.ServiceTokenSecretARN }, arn},
	{"DB_PROXY_ENDPOINT", "", func(c *Config) any { return &c.DB.ProxyEndpoint }, checked(checkHost)},
	{"DB_CA_BUNDLE", "", func(c *Config) any { return &c.DB.CABundle }, absPath},
	{"DB_IAM_AUTH", "false", func(c *Config) any { return &c.DB.IAMAuth }, boolean},
	{"DB_MAX_CONNS", "", func(c *Config) any { return &c.DB.MaxConns }, poolConns},
	{"DB_CONN_MAX_LIFETIME", "", func(c *Config) any { return &c.DB.ConnMaxLifetime }, positive},
	{"DB_STATEMENT_TIMEOUT", "", func(c *Config) any { return &c.DB.StatementTimeout }, positive},
	{"DB_QUERY_EXEC_MODE", "", func(c *Config) any { return &c.DB.QueryExecMode }, checked(checkQueryExecMode)},
	{"LEAF_CERT_LIFETIME", pki.DefaultLeafLifetime.String(), func(c *Config) any { return &c.LeafCertLifetime }, leafLife},
	{"CERT_RENEW_BEFORE", "", func(c *Config) any { return &c.CertRenewBefore }, positive},
	{"ETCD_SNAPSHOT_BUCKET", "", func(c *Config) any { return &c.EtcdSnapshotBucket }, checked(checkBucket)},
	{"ETCD_SNAPSHOT_NODE_ENDPOINT", "", func(c *Config) any { return &c.EtcdSnapshotNodeEndpoint }, webURL},
	{"CONTROL_PLANE_DNS_TTL_SECONDS", strconv.Itoa(clusterfacts.DNSRecordTTL), func(c *Config) any { return &c.ControlPlaneDNSTTLSeconds }, wholeNumber(1, maxDNSTTL)},
}

// localSwitches are read like variables, but only local stacks and
// benchmarks set them: template.yaml does not declare them.
var localSwitches = []variable{
	{"K8SAPI_DEBUG_COUNTERS", "false", func(c *Config) any { return &c.DebugCounters }, boolean},
	{"K8SAPI_CA_DISTRUST_WAIT", "", func(c *Config) any { return &c.CADistrustWait }, positive},
}

// everyVariable is what FromLookup reads.
var everyVariable = slices.Concat(variables, localSwitches)

// Variables lists the names of every variable a deployment sets (each
// function's environment in template.yaml), in table order.
func Variables() []string {
	names := make([]string, len(variables))
	for i, v := range variables {
		names[i] = v.name
	}
	return names
}

func lookupVariable(name string) (variable, bool) {
	for _, v := range everyVariable {
		if v.name == name {
			return v, true
		}
	}
	return variable{}, false
}
