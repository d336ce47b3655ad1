package devstack

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// Env is the stack as KEY=VALUE pairs, in a fixed order.
func (s Stack) Env() [][2]string {
	return [][2]string{
		{"API_URL", s.APIURL},
		{"DATABASE_URL", s.DatabaseURL},
		{"SIM_URL", s.SimURL},
		{"AWS_ENDPOINT_URL", s.AWSEndpointURL},
		{"AWS_REGION", localaws.LocalRegion},
		{"AWS_ACCESS_KEY_ID", localaws.LocalAccessKey},
		{"AWS_SECRET_ACCESS_KEY", localaws.LocalSecretKey},
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

// FunctionEnv is the environment the local stack gives function f: the
// overrides every function gets, its own database user (a member of its
// role only, migration 011; EnsureFunctionLogins made it), and the service
// token for a scheduled function only (no API function gets it).
func FunctionEnv(f samtemplate.Function, st Stack) (map[string]string, error) {
	env := FunctionOverrides(st)
	dsn, err := localpg.FunctionDSN(st.DatabaseURL, f.LogicalID)
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
		"AWS_REGION":            localaws.LocalRegion,
		"AWS_DEFAULT_REGION":    localaws.LocalRegion,
		"AWS_ACCESS_KEY_ID":     localaws.LocalAccessKey,
		"AWS_SECRET_ACCESS_KEY": localaws.LocalSecretKey,
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
// (ETCD_SNAPSHOT_NODE_ENDPOINT), and one whose CA rotations distrust the
// old roots after minutes (K8SAPI_CA_DISTRUST_WAIT, a local switch) and
// wait seconds, not minutes, after moving the control-plane name
// (CONTROL_PLANE_DNS_TTL_SECONDS).
var passedThrough = []string{"LEAF_CERT_LIFETIME", "CERT_RENEW_BEFORE", "VM_CALL_BUDGET_FACTOR",
	"KUBE_DOWNLOAD_BASE", "ETCD_DOWNLOAD_BASE", "ETCD_VERSION", "HELM_DOWNLOAD_BASE",
	"CONTAINERD_DOWNLOAD_BASE", "RUNC_DOWNLOAD_BASE", "CNI_PLUGINS_DOWNLOAD_BASE", "CILIUM_CHART",
	"IMAGE_REGISTRY", "IMAGE_REGISTRY_PLAIN_HTTP", "ARTIFACT_MANIFEST_FILE", "ARTIFACT_DIGEST_FALLBACK",
	"ETCD_SNAPSHOT_NODE_ENDPOINT", "K8SAPI_CA_DISTRUST_WAIT", "CONTROL_PLANE_DNS_TTL_SECONDS"}

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
func writeSAMEnv(path string, tmpl *samtemplate.Template, st Stack) error {
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
