package config_test

import (
	"context"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/awssecret"
	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/jackc/pgx/v5"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://x@h/db?sslmode=verify-full", "BASE_DNS_DOMAIN": ""}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		DatabaseURL:     "postgres://x@h/db?sslmode=verify-full",
		BaseDNSDomain:   "k8s.excloud.co.in",
		BootstrapWindow: progress.DefaultWindow, VMCallBudgetFactor: 1,
		KubernetesVersion: "v1.35.4",
		LogLevel:          slog.LevelInfo,
		// No manifest file: the one k8sapi ships; no fallback; https.
		Artifacts:                 artifacts.Default(),
		LeafCertLifetime:          8760 * time.Hour,
		ControlPlaneDNSTTLSeconds: 300,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if c.Artifacts.KubeDownloadBase != "https://dl.k8s.io" || c.Artifacts.EtcdVersion != "v3.6.10" {
		t.Fatalf("artifact defaults: %+v", c.Artifacts)
	}
	// A variable lands in the bundle's artifacts; the rest stay upstream's.
	c, err = config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://x@h/db?sslmode=verify-full", "ETCD_VERSION": "v3.6.11",
		"IMAGE_REGISTRY": "mirror.example:5000/k8s"}))
	if err != nil || c.Artifacts.EtcdVersion != "v3.6.11" || c.Artifacts.ImageRegistry != "mirror.example:5000/k8s" ||
		c.Artifacts.PauseVersion != artifacts.Default().PauseVersion {
		t.Fatalf("overrides: %+v, %v", c.Artifacts, err)
	}
	if c, err = config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://x@h/db?sslmode=verify-full", "LOG_LEVEL": "WARN"})); err != nil || c.LogLevel != slog.LevelWarn {
		t.Fatalf("level %v, %v", c.LogLevel, err)
	}
}

// Outside local runs VMs fetch keys over HTTPS only and the database's
// certificate is verified; a local run may do neither. Each by exact text.
func TestDeployedRules(t *testing.T) {
	weak := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=require", "BOOTSTRAP_BASE_URL": "http://k8sapi.example"}
	_, err := config.FromLookup(lookup(weak))
	want := "BOOTSTRAP_BASE_URL: must be https outside local runs (LOCAL_RUN=true)\n" +
		"DATABASE_URL: must set sslmode=verify-full outside local runs (LOCAL_RUN=true)"
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	weak["LOCAL_RUN"] = "true"
	if c, err := config.FromLookup(lookup(weak)); err != nil || !c.LocalRun {
		t.Fatalf("a local run: %v", err)
	}
	strong := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "BOOTSTRAP_BASE_URL": "https://k8sapi.example",
		"BOOTSTRAP_WINDOW": "30m", "DB_CA_BUNDLE": "/opt/rds/global-bundle.pem"}
	c, err := config.FromLookup(lookup(strong))
	if err != nil || c.BootstrapWindow != 30*time.Minute || c.DB.CABundle != "/opt/rds/global-bundle.pem" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range []struct{ name, value, err string }{
		{"BOOTSTRAP_WINDOW", "30s", "BOOTSTRAP_WINDOW: must be a duration from 1m to 24h, like 1h or 30m"},
		{"BOOTSTRAP_WINDOW", "25h", "BOOTSTRAP_WINDOW: must be a duration from 1m to 24h, like 1h or 30m"},
		{"BOOTSTRAP_WINDOW", "soon", "BOOTSTRAP_WINDOW: must be a duration from 1m to 24h, like 1h or 30m"},
		{"VM_CALL_BUDGET_FACTOR", "0", "VM_CALL_BUDGET_FACTOR: must be a whole number from 1 to 1000"},
		{"ETCD_SNAPSHOT_BUCKET", "My.Bucket", "ETCD_SNAPSHOT_BUCKET: must be an S3 bucket name of 3-63 lower-case letters, digits and hyphens"},
		{"ETCD_SNAPSHOT_NODE_ENDPOINT", "198.51.100.1:9000", "ETCD_SNAPSHOT_NODE_ENDPOINT: must be an absolute URL (http, https)"},
		{"VM_CALL_BUDGET_FACTOR", "1001", "VM_CALL_BUDGET_FACTOR: must be a whole number from 1 to 1000"},
		{"VM_CALL_BUDGET_FACTOR", "2.5", "VM_CALL_BUDGET_FACTOR: must be a whole number from 1 to 1000"},
		{"DB_CA_BUNDLE", "rds.pem", "DB_CA_BUNDLE: must be an absolute file path"},
		{"LOCAL_RUN", "yes", "LOCAL_RUN: must be true or false"},
	} {
		env := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full", bad.name: bad.value}
		if _, err := config.FromLookup(lookup(env)); err == nil || err.Error() != bad.err {
			t.Errorf("%s=%s: %v, want %q", bad.name, bad.value, err, bad.err)
		}
	}
}

// Every problem is reported at once, by variable name, without echoing values.
func TestFromLookupCollectsErrors(t *testing.T) {
	_, err := config.FromLookup(lookup(map[string]string{
		"COMPUTE_API_URL":           "not a url with secret",
		"KUBERNETES_VERSION":        "1.35",
		"LOG_LEVEL":                 "loud",
		"BASE_DNS_DOMAIN":           "Bad_Domain",
		"IMAGE_REGISTRY":            "https://registry.example.com",
		"DB_PROXY_ENDPOINT":         "https://proxy.example.com:5432",
		"DB_IAM_AUTH":               "maybe",
		"DB_MAX_CONNS":              "50",
		"DB_CONN_MAX_LIFETIME":      "-1m",
		"DB_STATEMENT_TIMEOUT":      "10",
		"DB_QUERY_EXEC_MODE":        "cache_statement",
		"IMAGE_REGISTRY_PLAIN_HTTP": "http",
		"ARTIFACT_MANIFEST_FILE":    "pins.sha256",
		"ARTIFACT_DIGEST_FALLBACK":  "sometimes",
	}))
	want := strings.Join([]string{
		"COMPUTE_API_URL: must be an absolute URL (http, https)",
		"BASE_DNS_DOMAIN: must be a lower-case DNS domain like k8s.example.com",
		"KUBERNETES_VERSION: must look like v1.2.3",
		"LOG_LEVEL: must be debug, info, warn or error",
		"IMAGE_REGISTRY: must be a registry host[:port][/path] without a scheme",
		"IMAGE_REGISTRY_PLAIN_HTTP: must be true or false",
		"ARTIFACT_MANIFEST_FILE: must be an absolute file path",
		"ARTIFACT_DIGEST_FALLBACK: must be true or false",
		"DB_PROXY_ENDPOINT: must be a host name without scheme or port",
		"DB_IAM_AUTH: must be true or false",
		"DB_MAX_CONNS: must be a whole number from 1 to 8",
		"DB_CONN_MAX_LIFETIME: must be a positive duration like 10s or 5m",
		"DB_STATEMENT_TIMEOUT: must be a positive duration like 10s or 5m",
		"DB_QUERY_EXEC_MODE: must be exec or simple_protocol",
		"DATABASE_URL or DB_SECRET_ARN: one is required",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	if strings.Contains(err.Error(), "with secret") {
		t.Fatal("error echoes a value")
	}
}

// The artifact set founding records: the shipped manifest's pins unless an
// operator's file replaces them, the fallback and the registry's scheme
// only when asked for; a manifest that does not parse stops the start.
func TestNodeArtifacts(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full"}
	c, err := config.FromLookup(lookup(env))
	shipped, serr := artifacts.ShippedManifest()
	a, aerr := c.NodeArtifacts()
	if err != nil || serr != nil || aerr != nil || !maps.Equal(a.SHA256, shipped) || a.DigestFallback || a.ImageRegistryPlainHTTP {
		t.Fatalf("defaults: %+v, %v %v %v", a, err, serr, aerr)
	}
	dir := t.TempDir()
	pins := filepath.Join(dir, "pins.sha256")
	digest := strings.Repeat("c", 64)
	if err := os.WriteFile(pins, []byte("# the mirror's builds\n"+digest+"  kubelet-v1.35.4-linux-amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env["ARTIFACT_MANIFEST_FILE"], env["ARTIFACT_DIGEST_FALLBACK"], env["IMAGE_REGISTRY_PLAIN_HTTP"] = pins, "true", "TRUE"
	c, err = config.FromLookup(lookup(env))
	a, aerr = c.NodeArtifacts()
	if err != nil || aerr != nil || !maps.Equal(a.SHA256, map[string]string{"kubelet-v1.35.4-linux-amd64": digest}) ||
		!a.DigestFallback || !a.ImageRegistryPlainHTTP || a.ImageRegistry != "registry.k8s.io" {
		t.Fatalf("an operator's manifest: %+v, %v %v", a, err, aerr)
	}
	for content, want := range map[string]string{
		"": "ARTIFACT_MANIFEST_FILE: open " + filepath.Join(dir, "none") + ": no such file or directory",
		"kubelet-v1.35.4-linux-amd64  " + digest + "\n": "ARTIFACT_MANIFEST_FILE " + pins +
			`: line 1: "kubelet-v1.35.4-linux-amd64" is not a hex SHA-256`,
	} {
		env["ARTIFACT_MANIFEST_FILE"] = filepath.Join(dir, "none")
		if content != "" {
			env["ARTIFACT_MANIFEST_FILE"] = pins
			if err := os.WriteFile(pins, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := config.FromLookup(lookup(env))
		if _, err := c.NodeArtifacts(); err == nil || err.Error() != want {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}

// A variable is set when its typed value is not zero: a default counts.
func TestRequire(t *testing.T) {
	c, err := config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "KMS_KEY_ID": "k",
		"DB_MAX_CONNS": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Require("KMS_KEY_ID", "DATABASE_URL", "BOOTSTRAP_WINDOW", "DB_MAX_CONNS"); err != nil {
		t.Fatal(err)
	}
	err = c.Require("KMS_KEY_ID", "COMPUTE_API_URL", "DB_STATEMENT_TIMEOUT", "NOPE")
	want := "COMPUTE_API_URL: required\nDB_STATEMENT_TIMEOUT: required\nNOPE: not a configuration variable"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// The DSN is built from an RDS-style secret stored in moto's Secrets
// Manager, and it really connects to PostgreSQL.
func TestDatabaseDSNFromSecretsManager(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	cfg := testenv.AWSConfig(testenv.Moto(t))
	secret, err := localaws.DBSecretFromDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	arn, err := localaws.PutDBSecret(ctx, cfg, localpg.UniqueDatabaseName("k8sapi-db"), secret)
	if err != nil {
		t.Fatal(err)
	}
	// A local run: the test's server has no TLS (verify-full is
	// TestDSNFromSecretVerifiesTheServer's).
	c, err := config.FromLookup(lookup(map[string]string{"DB_SECRET_ARN": arn, "LOCAL_RUN": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.DatabaseDSN(ctx, c, awssecret.New(cfg))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, got)
	if err != nil {
		t.Fatalf("connecting with the DSN from the secret: %v", err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != secret.DBName {
		t.Fatalf("connected to %q (err %v), want %q", db, err, secret.DBName)
	}

	// A missing secret is an error naming what was being done.
	c.DBSecretARN = arn + "-missing"
	if _, err := config.DatabaseDSN(ctx, c, awssecret.New(cfg)); err == nil || !strings.HasPrefix(err.Error(), "reading the database secret:") {
		t.Fatalf("missing secret: %v", err)
	}
}

// DATABASE_URL wins and needs no AWS at all.
func TestDatabaseDSNPrefersDatabaseURL(t *testing.T) {
	got, err := config.DatabaseDSN(context.Background(), config.Config{DatabaseURL: "postgres://a@b/c", DBSecretARN: "arn:x"}, nil)
	if err != nil || got != "postgres://a@b/c" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAWSFromLookup(t *testing.T) {
	env := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET",
		"AWS_SESSION_TOKEN": "TOKEN", "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.AWSFromLookup(lookup)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || creds.AccessKeyID != "AKID" || creds.SessionToken != "TOKEN" {
		t.Errorf("credentials = %+v, %v", creds, err)
	}
	if cfg.Region != "eu-west-1" || cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != "http://127.0.0.1:5000" {
		t.Errorf("config = %s %v", cfg.Region, cfg.BaseEndpoint)
	}
	empty, err := config.AWSFromLookup(func(string) (string, bool) { return "", false })
	if err != nil || empty.Credentials != nil || empty.BaseEndpoint != nil {
		t.Errorf("empty environment: %+v, %v", empty, err)
	}
}

// The pool variables arrive typed; unset ones stay zero (the store's default).
func TestPool(t *testing.T) {
	c, err := config.FromLookup(lookup(map[string]string{
		"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "DB_PROXY_ENDPOINT": "k8sapi.proxy-abc.eu-west-1.rds.amazonaws.com",
		"DB_IAM_AUTH": "true", "DB_MAX_CONNS": "2", "DB_CONN_MAX_LIFETIME": "5m",
		"DB_STATEMENT_TIMEOUT": "10s", "DB_QUERY_EXEC_MODE": "simple_protocol",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.DB{
		ProxyEndpoint: "k8sapi.proxy-abc.eu-west-1.rds.amazonaws.com", IAMAuth: true, MaxConns: 2,
		ConnMaxLifetime: 5 * time.Minute, StatementTimeout: 10 * time.Second, QueryExecMode: "simple_protocol",
	}
	if c.DB != want {
		t.Fatalf("got %+v\nwant %+v", c.DB, want)
	}
	if c, err := config.FromLookup(lookup(map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full"})); err != nil || c.DB != (config.DB{}) {
		t.Fatalf("unset: %+v, %v", c.DB, err)
	}
}

// The IAM auth token is a SigV4-presigned connect URL for the host, port and
// user, signed locally with the environment's credentials.
func TestDBAuthToken(t *testing.T) {
	awsCfg, _ := config.AWSFromLookup(lookup(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "SECRET",
	}))
	token, err := config.DBAuthToken(awsCfg)(t.Context(), "prx.example", 5432, "k8sapi")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse("https://" + token)
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	q := u.Query()
	if u.Host != "prx.example:5432" || q.Get("Action") != "connect" || q.Get("DBUser") != "k8sapi" ||
		!strings.HasPrefix(q.Get("X-Amz-Credential"), "AKIDEXAMPLE/") || !strings.Contains(q.Get("X-Amz-Credential"), "/eu-west-1/rds-db/") ||
		q.Get("X-Amz-Signature") == "" {
		t.Fatalf("token %q", token)
	}
	// Without credentials it says so instead of sending an unsigned token.
	_, err = config.DBAuthToken(aws.Config{})(t.Context(), "prx.example", 5432, "k8sapi")
	if err == nil || !strings.Contains(err.Error(), "no AWS credentials") {
		t.Fatalf("no credentials: %v", err)
	}
}

// The debug counters are a local switch: read like any variable, a bad
// value stops the start, but no deployment declares it.
func TestDebugCountersIsALocalSwitch(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "K8SAPI_DEBUG_COUNTERS": "1"}
	if c, err := config.FromLookup(lookup(env)); err != nil || !c.DebugCounters {
		t.Fatalf("on: %v, %v", c.DebugCounters, err)
	}
	env["K8SAPI_DEBUG_COUNTERS"] = "yes"
	if _, err := config.FromLookup(lookup(env)); err == nil || err.Error() != "K8SAPI_DEBUG_COUNTERS: must be true or false" {
		t.Fatalf("bad value: %v", err)
	}
	if slices.Contains(config.Variables(), "K8SAPI_DEBUG_COUNTERS") {
		t.Fatal("Variables lists a local switch, which template.yaml does not declare")
	}
}

// A local stack may shorten a CA rotation's distrust wait; a deployment
// cannot (template.yaml does not declare the switch).
func TestCADistrustWaitIsALocalSwitch(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "K8SAPI_CA_DISTRUST_WAIT": "2m"}
	if c, err := config.FromLookup(lookup(env)); err != nil || c.CADistrustWait != 2*time.Minute {
		t.Fatalf("2m: %v, %v", c.CADistrustWait, err)
	}
	env["K8SAPI_CA_DISTRUST_WAIT"] = "soon"
	if _, err := config.FromLookup(lookup(env)); err == nil || !strings.HasPrefix(err.Error(), "K8SAPI_CA_DISTRUST_WAIT: ") {
		t.Fatalf("bad value: %v", err)
	}
	if slices.Contains(config.Variables(), "K8SAPI_CA_DISTRUST_WAIT") {
		t.Fatal("Variables lists a local switch, which template.yaml does not declare")
	}
}

// A value for every variable, each non-zero, lands in its field: a row
// whose parser and field disagree on the type would panic here.
func TestEveryVariableLands(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL": "postgres://h/db?sslmode=verify-full", "DB_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:x",
		"KMS_KEY_ID": "k", "COMPUTE_API_URL": "https://compute.example", "DNS_API_URL": "https://dns.example",
		"BOOTSTRAP_BASE_URL": "https://k8sapi.example", "LOCAL_RUN": "true", "VM_CALL_BUDGET_FACTOR": "2",
		"LOG_LEVEL": "debug", "IMAGE_REGISTRY_PLAIN_HTTP": "true", "ARTIFACT_MANIFEST_FILE": "/pins.sha256",
		"ARTIFACT_DIGEST_FALLBACK": "true", "SERVICE_TOKEN": "t", "SERVICE_TOKEN_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:t",
		"DB_PROXY_ENDPOINT": "prx.example", "DB_CA_BUNDLE": "/ca.pem", "DB_IAM_AUTH": "true", "DB_MAX_CONNS": "2",
		"DB_CONN_MAX_LIFETIME": "1m", "DB_STATEMENT_TIMEOUT": "1s", "DB_QUERY_EXEC_MODE": "exec", "CERT_RENEW_BEFORE": "1h",
		"ETCD_SNAPSHOT_BUCKET": "k8sapi-etcd-snapshots", "ETCD_SNAPSHOT_NODE_ENDPOINT": "http://198.51.100.1:9000",
	}
	c, err := config.FromLookup(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Require(config.Variables()...); err != nil {
		t.Fatal(err)
	}
}
