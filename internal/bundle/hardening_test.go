package bundle

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const (
	apiserverManifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	encryptionConfig  = "/etc/exk8s/apiserver/encryption-config.yaml"
	authnConfig       = "/etc/exk8s/apiserver/authentication-config.yaml"
	auditPolicy       = "/etc/exk8s/apiserver/audit-policy.yaml"
)

// The configuration files' shapes, as much of apiserver.config.k8s.io/v1
// and audit.k8s.io/v1 as they use: a strict decode fails on any other
// field, so a typo cannot pass.
type encryptionConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Resources  []struct {
		Resources []string `json:"resources"`
		Providers []struct {
			Secretbox *struct {
				Keys []struct{ Name, Secret string } `json:"keys"`
			} `json:"secretbox"`
			Identity *struct{} `json:"identity"`
		} `json:"providers"`
	} `json:"resources"`
}

type authenticationConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Anonymous  struct {
		Enabled    bool `json:"enabled"`
		Conditions []struct {
			Path string `json:"path"`
		} `json:"conditions"`
	} `json:"anonymous"`
}

type auditRule struct {
	Level           string   `json:"level"`
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Resources       []struct {
		Group     string   `json:"group"`
		Resources []string `json:"resources"`
	} `json:"resources"`
}

type auditPolicyDoc struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	OmitStages []string    `json:"omitStages"`
	Rules      []auditRule `json:"rules"`
}

func TestSecretsEncryptedWithTheClustersKey(t *testing.T) {
	cp, bundles := realBundles(t)
	for _, b := range bundles {
		f, ok := b.File(encryptionConfig)
		if !ok || f.Mode != modeSecret {
			t.Fatalf("%s: encryption config present %v, mode %04o; want 0600", b.Metadata.NodeName, ok, f.Mode)
		}
		var ec encryptionConfiguration
		strictYAML(t, encryptionConfig, f.Content, &ec)
		if ec.APIVersion != "apiserver.config.k8s.io/v1" || ec.Kind != "EncryptionConfiguration" || len(ec.Resources) != 1 ||
			!slices.Equal(ec.Resources[0].Resources, []string{"secrets"}) {
			t.Fatalf("encryption config is not for secrets: %+v", ec)
		}
		providers := ec.Resources[0].Providers
		if len(providers) != 2 || providers[0].Secretbox == nil || len(providers[0].Secretbox.Keys) != 1 || providers[1].Identity == nil {
			t.Fatalf("providers: want secretbox with one key, then identity; got %+v", providers)
		}
		key, err := base64.StdEncoding.DecodeString(providers[0].Secretbox.Keys[0].Secret)
		if err != nil || !bytes.Equal(key, cp.trust.SecretsEncryptionKey) {
			t.Errorf("the secretbox key is not the cluster's (%v)", err)
		}
		if got := flags(mustFile(t, b, apiserverManifest))["encryption-provider-config"]; got != encryptionConfig {
			t.Errorf("--encryption-provider-config=%q", got)
		}
	}
}

// A cluster founded before keys were made renders as before: no encryption
// config, no flag, and the manifest says why.
func TestNoKeyRendersNoEncryption(t *testing.T) {
	c, nodes := testCluster()
	cp := issueClusterPKI(t, c, nodes, time.Now)
	in := cp.input(c, nodes, 101)
	in.SecretsEncryptionKey = nil
	b, err := newTestRenderer(t).Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.File(encryptionConfig); ok {
		t.Error("an encryption config without a key")
	}
	manifest := mustFile(t, b, apiserverManifest)
	if _, ok := flags(manifest)["encryption-provider-config"]; ok || !strings.Contains(manifest, "stored in etcd as they come, unencrypted") {
		t.Errorf("the manifest does not say Secrets are stored unencrypted:\n%s", manifest)
	}
}

func TestRenderRefusesAShortSecretsKey(t *testing.T) {
	c, nodes := testCluster()
	in := issueClusterPKI(t, c, nodes, time.Now).input(c, nodes, 101)
	in.SecretsEncryptionKey = []byte("short")
	_, err := newTestRenderer(t).Render(in)
	if err == nil || !strings.Contains(err.Error(), "secrets_encryption_key: must be empty or 32 bytes, got 5") {
		t.Errorf("got %v", err)
	}
}

// Anonymous requests reach the health endpoints only, and what asks them
// anonymously (the kubelet's probes of the API server) asks nothing else.
func TestAnonymousOnlyForHealth(t *testing.T) {
	_, bundles := realBundles(t)
	b := bundles[101]
	var ac authenticationConfiguration
	strictYAML(t, authnConfig, mustFile(t, b, authnConfig), &ac)
	var paths []string
	for _, c := range ac.Anonymous.Conditions {
		paths = append(paths, c.Path)
	}
	if ac.APIVersion != "apiserver.config.k8s.io/v1" || ac.Kind != "AuthenticationConfiguration" || !ac.Anonymous.Enabled ||
		!slices.Equal(paths, []string{"/livez", "/readyz", "/healthz"}) {
		t.Errorf("authentication config: %+v", ac)
	}
	manifest := mustFile(t, b, apiserverManifest)
	if f := flags(manifest); f["authentication-config"] != authnConfig || strings.Contains(manifest, "--anonymous-auth") {
		t.Errorf("want --authentication-config and no --anonymous-auth: %v", f)
	}
	var pod corev1.Pod
	strictYAML(t, apiserverManifest, manifest, &pod)
	for _, p := range []*corev1.Probe{pod.Spec.Containers[0].LivenessProbe, pod.Spec.Containers[0].ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || !slices.Contains(paths, p.HTTPGet.Path) {
			t.Errorf("a probe asks what anonymous requests cannot reach: %+v", p)
		}
	}
}

// firstMatch is the audit rule that decides a request on resource of group.
func firstMatch(rules []auditRule, group, resource string) auditRule {
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			continue
		}
		if len(r.Resources) == 0 {
			return r
		}
		for _, gr := range r.Resources {
			if gr.Group == group && (len(gr.Resources) == 0 || slices.Contains(gr.Resources, resource)) {
				return r
			}
		}
	}
	return auditRule{}
}

func TestAuditPolicyLogsNoSecrets(t *testing.T) {
	_, bundles := realBundles(t)
	b := bundles[101]
	var p auditPolicyDoc
	strictYAML(t, auditPolicy, mustFile(t, b, auditPolicy), &p)
	if p.APIVersion != "audit.k8s.io/v1" || p.Kind != "Policy" || !slices.Equal(p.OmitStages, []string{"RequestReceived"}) {
		t.Errorf("audit policy: %s %s omits %v", p.APIVersion, p.Kind, p.OmitStages)
	}
	for _, r := range p.Rules {
		if r.Level == "RequestResponse" {
			t.Errorf("a rule logs responses: %+v", r)
		}
	}
	for _, gr := range [][2]string{{"", "secrets"}, {"", "configmaps"}, {"", "serviceaccounts/token"}, {"authentication.k8s.io", "tokenreviews"}} {
		if r := firstMatch(p.Rules, gr[0], gr[1]); r.Level != "Metadata" {
			t.Errorf("%s/%s is logged at %q, want Metadata", gr[0], gr[1], r.Level)
		}
	}
	if last := p.Rules[len(p.Rules)-1]; last.Level != "Metadata" || len(last.Resources)+len(last.Verbs)+len(last.NonResourceURLs) != 0 {
		t.Errorf("the last rule is not Metadata for everything: %+v", last)
	}
	f := flags(mustFile(t, b, apiserverManifest))
	for k, v := range map[string]string{"audit-policy-file": auditPolicy, "audit-log-path": "/var/log/kubernetes/audit/audit.log",
		"audit-log-maxage": "30", "audit-log-maxbackup": "10", "audit-log-maxsize": "100"} {
		if f[k] != v {
			t.Errorf("--%s=%q, want %q", k, f[k], v)
		}
	}
}

// Every file the API server is told about is inside a volume of its pod:
// the configuration read-only, the audit log's folder writable.
func TestAPIServerMountsWhatItReads(t *testing.T) {
	_, bundles := realBundles(t)
	var pod corev1.Pod
	strictYAML(t, apiserverManifest, mustFile(t, bundles[101], apiserverManifest), &pod)
	mounts := map[string]bool{} // mount path -> read-only
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.ReadOnly
	}
	for _, arg := range pod.Spec.Containers[0].Command {
		_, value, _ := strings.Cut(arg, "=")
		if !strings.HasPrefix(value, "/etc/") && !strings.HasPrefix(value, "/var/") {
			continue
		}
		dir := value[:strings.LastIndex(value, "/")]
		readOnly, ok := mounts[dir]
		if !ok || readOnly == strings.HasPrefix(dir, "/var/log/") {
			t.Errorf("%s: folder %s mounted %v, read-only %v", arg, dir, ok, readOnly)
		}
	}
}

// The TLS floor: TLS 1.2 and the same AEAD suites on every serving
// component, each a suite Go counts as secure (ChaCha20's by its older name).
func TestTLSFloorOnEveryServingComponent(t *testing.T) {
	for _, s := range tlsCipherSuites {
		if !slices.ContainsFunc(tls.CipherSuites(), func(c *tls.CipherSuite) bool { return strings.TrimSuffix(c.Name, "_SHA256") == s || c.Name == s }) {
			t.Errorf("%s is not a secure suite by Go's list", s)
		}
	}
	list := strings.Join(tlsCipherSuites, ",")
	_, bundles := realBundles(t)
	b := bundles[101]
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		f := flags(mustFile(t, b, "/etc/kubernetes/manifests/"+c+".yaml"))
		if f["tls-min-version"] != "VersionTLS12" || f["tls-cipher-suites"] != list || f["profiling"] != "false" {
			t.Errorf("%s: --tls-min-version=%q --tls-cipher-suites=%q --profiling=%q", c, f["tls-min-version"], f["tls-cipher-suites"], f["profiling"])
		}
	}
	etcd := flags(mustFile(t, b, "/etc/systemd/system/etcd.service"))
	if etcd["tls-min-version"] != "TLS1.2" || etcd["cipher-suites"] != list {
		t.Errorf("etcd: --tls-min-version=%q --cipher-suites=%q", etcd["tls-min-version"], etcd["cipher-suites"])
	}
	var kc kubeletv1beta1.KubeletConfiguration
	strictYAML(t, "kubelet config", mustFile(t, b, "/var/lib/kubelet/config.yaml"), &kc)
	if kc.TLSMinVersion != "VersionTLS12" || !slices.Equal(kc.TLSCipherSuites, tlsCipherSuites) {
		t.Errorf("kubelet: tlsMinVersion %q, tlsCipherSuites %v", kc.TLSMinVersion, kc.TLSCipherSuites)
	}
	if kc.Authentication.Anonymous.Enabled == nil || *kc.Authentication.Anonymous.Enabled || kc.ReadOnlyPort != 0 {
		t.Errorf("kubelet: anonymous %v, read-only port %d; want neither", kc.Authentication.Anonymous.Enabled, kc.ReadOnlyPort)
	}
}
