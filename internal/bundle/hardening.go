package bundle

import (
	"path"
	"strings"
)

// The API server's own configuration (encryption at rest, audit policy,
// authentication) lives in one folder, mounted read-only into its static
// pod; its audit log in another, which the pod writes.
const (
	apiserverConfigDir = "/etc/exk8s/apiserver"
	auditLogDir        = "/var/log/kubernetes/audit"
)

// tlsCipherSuites are the TLS 1.2 suites every serving component offers:
// ECDHE key exchange (forward secrecy) with an AEAD cipher only, for ECDSA
// and RSA certificates both (a cluster's keys are one or the other). TLS
// 1.3's suites are not configurable and all of them are fine. ChaCha20 goes
// by its older name, without _SHA256: Kubernetes and etcd take both, and
// the CIS benchmark's kubelet check knows only this one.
var tlsCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
}

// tlsView is the TLS floor of every serving component, in the spelling
// each one takes.
type tlsView struct {
	MinVersion     string // Kubernetes components and the kubelet
	EtcdMinVersion string // etcd
	CipherSuites   []string
	CipherList     string // the suites as one flag value
}

func newTLSView() tlsView {
	return tlsView{MinVersion: "VersionTLS12", EtcdMinVersion: "TLS1.2", CipherSuites: tlsCipherSuites,
		CipherList: strings.Join(tlsCipherSuites, ",")}
}

// apiserverView is what kube-apiserver.yaml needs beyond the node: where
// its configuration files are and whether Secrets are encrypted at rest.
type apiserverView struct {
	ConfigDir, AuditLogDir string
	EncryptionConfig       string // empty: no key, Secrets are stored as they come
	AuditPolicy            string
	AuthenticationConfig   string
}

func newAPIServerView(in *Input) apiserverView {
	v := apiserverView{
		ConfigDir: apiserverConfigDir, AuditLogDir: auditLogDir,
		AuditPolicy:          path.Join(apiserverConfigDir, "audit-policy.yaml"),
		AuthenticationConfig: path.Join(apiserverConfigDir, "authentication-config.yaml"),
	}
	if len(in.SecretsEncryptionKey) > 0 {
		v.EncryptionConfig = path.Join(apiserverConfigDir, "encryption-config.yaml")
	}
	return v
}

// encryptionView is the EncryptionConfiguration's data: the key and the
// name it is known by in etcd's values (k8s:enc:secretbox:v1:<name>:), so
// a rotation can add a second key beside it.
type encryptionView struct {
	KeyName string
	Key     []byte
}

// apiserverConfigPart is the API server's configuration files. Every node
// is a control-plane node today; a worker's bundle would leave this part
// out, since the encryption key is only an API server's business.
func apiserverConfigPart(v *view) []fileSpec {
	out := []fileSpec{
		tmpl(v.APIServer.AuditPolicy, "audit-policy.yaml", modePublic, v),
		tmpl(v.APIServer.AuthenticationConfig, "authentication-config.yaml", modePublic, v),
	}
	if v.APIServer.EncryptionConfig != "" {
		out = append(out, tmpl(v.APIServer.EncryptionConfig, "encryption-config.yaml", modeSecret,
			encryptionView{KeyName: "k8sapi-1", Key: v.in.SecretsEncryptionKey}))
	}
	return out
}
