package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/excloud/k8sapi/e2e/harness"
)

// encryptedSecretPrefix starts every Secret the API server wrote through
// the EncryptionConfiguration k8sapi renders: the secretbox provider and
// its key's name.
const encryptedSecretPrefix = "k8s:enc:secretbox:v1:k8sapi-1:"

// anonymousAnswers is what a request without credentials gets from an API
// server: the health endpoints answer, anything else is refused (401) by
// authentication, before RBAC (which grants system:anonymous /version and
// discovery by default) is asked.
var anonymousAnswers = []struct {
	path string
	code int
}{
	{"/livez", 200}, {"/readyz", 200}, {"/healthz", 200},
	{"/version", 401}, {"/api", 401}, {"/apis", 401}, {"/openapi/v2", 401}, {"/metrics", 401},
	{"/api/v1/namespaces/kube-system/secrets", 401}, {"/debug/pprof/", 401},
}

// probeSecret is a Secret whose value is random, so its plaintext cannot be
// in etcd by accident.
func probeSecret() *corev1.Secret {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-at-rest", Namespace: "default"},
		StringData: map[string]string{"probe": "plaintext-" + hex.EncodeToString(b)}}
}

// secretsKey is where the API server stores a Secret in etcd.
func secretsKey(s *corev1.Secret) string {
	return "/registry/secrets/" + s.Namespace + "/" + s.Name
}

// encryptedAtRest judges the raw value etcd holds for s.
func encryptedAtRest(raw []byte, s *corev1.Secret) error {
	if !bytes.HasPrefix(raw, []byte(encryptedSecretPrefix)) {
		return fmt.Errorf("%s starts %q, want %q", secretsKey(s), raw[:min(len(raw), 32)], encryptedSecretPrefix)
	}
	if bytes.Contains(raw, []byte(s.StringData["probe"])) {
		return fmt.Errorf("%s holds the Secret's value in plaintext", secretsKey(s))
	}
	return nil
}

// anonymousRefused asks every path of anonymousAnswers with get (a request
// without credentials, answering the status code) and says what differs.
func anonymousRefused(get func(path string) (int, error)) (string, error) {
	var wrong, answered []string
	for _, a := range anonymousAnswers {
		code, err := get(a.path)
		if err != nil {
			return "", fmt.Errorf("GET %s: %w", a.path, err)
		}
		if code != a.code {
			wrong = append(wrong, fmt.Sprintf("%s answered %d, want %d", a.path, code, a.code))
		}
		if code == 200 {
			answered = append(answered, a.path)
		}
	}
	if len(wrong) > 0 {
		return "", fmt.Errorf("anonymous requests: %s", strings.Join(wrong, "; "))
	}
	return fmt.Sprintf("only %s answer without credentials", strings.Join(answered, ", ")), nil
}

// checkSecretsAtRest (the process-level proof): a Secret created through
// node 1's API server is stored encrypted, read raw from etcd.
func checkSecretsAtRest(t *testing.T, admin *kubernetes.Clientset, etcdEndpoints []string, n1 *node, dial harness.DialFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := probeSecret()
	if _, err := admin.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		fatalf(t, "creating a Secret: %v", err)
	}
	etcdTLS, err := harness.MutualTLS(n1.path(pkiDir+"/etcd-ca.pem"), n1.path(pkiDir+"/apiserver-etcd-client.pem"), n1.path(pkiDir+"/apiserver-etcd-client-key.pem"))
	if err != nil {
		fatal(t, err)
	}
	cli, err := harness.EtcdClient(etcdEndpoints, etcdTLS, dial)
	if err != nil {
		fatal(t, err)
	}
	defer cli.Close()
	got, err := cli.Get(ctx, secretsKey(s))
	if err != nil || len(got.Kvs) != 1 {
		fatalf(t, "reading %s from etcd: %v (%d values)", secretsKey(s), err, len(got.Kvs))
	}
	if err := encryptedAtRest(got.Kvs[0].Value, s); err != nil {
		fatal(t, err)
	}
	t.Logf("secrets encrypted at rest: %s starts %q", secretsKey(s), encryptedSecretPrefix)
}

// checkAnonymous (the process-level proof): node 1's API server answers a
// request without credentials on the health endpoints only.
func checkAnonymous(t *testing.T, admin *rest.Config) {
	anon := rest.AnonymousClientConfig(admin)
	cs := kubernetes.NewForConfigOrDie(anon)
	summary, err := anonymousRefused(func(path string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		code := 0
		err := cs.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).StatusCode(&code).Error()
		if code == 0 {
			return 0, err
		}
		return code, nil
	})
	if err != nil {
		fatal(t, err)
	}
	t.Logf("anonymous refused: %s", summary)
}

// checkHardening (the node proof): on the initial node, a Secret created
// with kubectl is encrypted in etcd (read with etcdctl), and every API
// server and kubelet refuses requests without credentials except the API
// server's health endpoints; no kubelet has a read-only port. It returns
// what held, for the summary line.
func (c *machineCluster) checkHardening(t *testing.T) []string {
	t.Helper()
	s := probeSecret()
	eventually(t, c.r, "a Secret encrypted in etcd", nil, time.Minute, func(ctx context.Context) (string, error) {
		if out, err := c.kubectl(ctx, "create", "secret", "generic", s.Name, "--from-literal=probe="+s.StringData["probe"]); err != nil &&
			!strings.Contains(string(out), "AlreadyExists") {
			return "", err
		}
		endpoint := "https://" + c.vms[0].addr.Addr().String() + ":2379"
		raw, err := c.initial().Exec(ctx, "etcdctl", "--endpoints="+endpoint, "--cacert=/etc/exk8s/pki/etcd-ca.pem",
			"--cert=/etc/exk8s/pki/apiserver-etcd-client.pem", "--key=/etc/exk8s/pki/apiserver-etcd-client-key.pem",
			"get", secretsKey(s), "--print-value-only")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s starts %q", secretsKey(s), encryptedSecretPrefix), encryptedAtRest(raw, s)
	})
	for _, v := range c.vms {
		addr := v.addr.Addr().String()
		eventually(t, c.r, "anonymous requests refused by the API server at "+addr, nil, time.Minute, func(ctx context.Context) (string, error) {
			return anonymousRefused(func(path string) (int, error) { return c.curlCode(ctx, "https://"+addr+":6443"+path) })
		})
		eventually(t, c.r, "anonymous requests refused by the kubelet at "+addr, nil, time.Minute, func(ctx context.Context) (string, error) {
			return c.kubeletRefuses(ctx, addr)
		})
	}
	return []string{"secrets encrypted at rest", "anonymous refused"}
}

// kubeletRefuses: the kubelet at addr refuses a request without
// credentials (401) and has no read-only port (nothing listens on 10255).
func (c *machineCluster) kubeletRefuses(ctx context.Context, addr string) (string, error) {
	for _, path := range []string{"/pods", "/metrics", "/configz"} {
		if code, err := c.curlCode(ctx, "https://"+addr+":10250"+path); err != nil || code != 401 {
			return "", fmt.Errorf("kubelet %s answered %d (%v), want 401", path, code, err)
		}
	}
	if code, _ := c.curlCode(ctx, "http://"+addr+":10255/pods"); code != 0 {
		return "", fmt.Errorf("the kubelet's read-only port answered %d", code)
	}
	return "401 on 10250, nothing on 10255", nil
}

// curlCode asks url from the initial node without credentials and returns
// the status code, 0 when nothing answered.
func (c *machineCluster) curlCode(ctx context.Context, url string) (int, error) {
	out, err := c.initial().Exec(ctx, "curl", "-sk", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", url)
	code, convErr := strconv.Atoi(strings.TrimSpace(lastLine(out)))
	if convErr != nil {
		return 0, fmt.Errorf("curl %s: %q (%v)", url, out, err)
	}
	return code, nil
}
