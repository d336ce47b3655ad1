package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// An operator's exec credential: the kubeconfig `k8sapi kubeconfig` writes
// runs `k8sapi credential --cluster ID` whenever kubectl needs a client
// certificate (client-go's exec plugin, as `aws eks get-token` is EKS's).
// It makes a key on this machine, sends a certificate request with the
// operator's token (POST /clusters/{id}/credentials), and caches the key
// and the 15-minute certificate it gets until that is about to expire. So
// the admin key never leaves this machine, and an operator whose token is
// revoked loses the cluster within 15 minutes.

// credentialRenewBefore is how long before its certificate's expiry a
// cached credential is replaced, and how much earlier than that expiry
// kubectl is told it ends: a request is never sent with a certificate
// about to lapse in flight, and a clock a little off is forgiven.
const credentialRenewBefore = time.Minute

// execCredentialAPIVersions are the ExecCredential versions this plugin
// answers; the first is the one kubeconfigs name and the default.
var execCredentialAPIVersions = []string{"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}

// execCredential is client-go's ExecCredential as a plugin prints it, its
// status a client certificate.
type execCredential struct {
	APIVersion string               `json:"apiVersion"`
	Kind       string               `json:"kind"`
	Status     execCredentialStatus `json:"status"`
}

type execCredentialStatus struct {
	ExpirationTimestamp   time.Time `json:"expirationTimestamp"`
	ClientCertificateData string    `json:"clientCertificateData"`
	ClientKeyData         string    `json:"clientKeyData"`
}

// cachedCredential is one cluster's credential in the cache: the API's
// answer (its certificate, the cluster's endpoint and CA) and the key
// made here (PEM).
type cachedCredential struct {
	Issued apitypes.IssuedCredential `json:"issued"`
	KeyPEM string                    `json:"key"`
}

func (a *app) credentialCommand() *cobra.Command {
	var id int64
	cmd := &cobra.Command{
		Use:   "credential --cluster ID",
		Short: "Print a cluster's client certificate as kubectl's exec plugin (the kubeconfig `k8sapi kubeconfig` writes runs it)",
		Long: "Prints an ExecCredential (client.authentication.k8s.io/v1) holding a client certificate of the cluster, living at most 15 minutes,\n" +
			"over a key made on this machine. It is cached (mode 0600, in the user's cache directory) until shortly before it expires,\n" +
			"then asked for again with the operator's token: revoking the token ends the cluster access within 15 minutes.",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.credential(ctx, id)
		}),
	}
	cmd.Flags().Int64Var(&id, "cluster", 0, "the cluster's id")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

func (a *app) credential(ctx context.Context, id int64) error {
	if id < 1 {
		return usageErrorf("cluster id %d is not a positive integer", id)
	}
	version, err := execCredentialVersion(a.getenv("KUBERNETES_EXEC_INFO"))
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	cred, expires, err := a.cachedOrNewCredential(ctx, c, id)
	if err != nil {
		return err
	}
	return json.NewEncoder(a.stdout).Encode(execCredential{APIVersion: version, Kind: "ExecCredential", Status: execCredentialStatus{
		ExpirationTimestamp:   expires.Add(-credentialRenewBefore).UTC(),
		ClientCertificateData: cred.Issued.Certificate, ClientKeyData: cred.KeyPEM,
	}})
}

// execCredentialVersion is the ExecCredential version kubectl asked for
// in KUBERNETES_EXEC_INFO (an ExecCredential itself), the first known one
// when it names none.
func execCredentialVersion(info string) (string, error) {
	if info == "" {
		return execCredentialAPIVersions[0], nil
	}
	var asked struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal([]byte(info), &asked); err != nil {
		return "", usageErrorf("KUBERNETES_EXEC_INFO is not an ExecCredential: %v", err)
	}
	for _, v := range execCredentialAPIVersions {
		if asked.APIVersion == v {
			return v, nil
		}
	}
	return "", usageErrorf("KUBERNETES_EXEC_INFO asks for %q; this plugin answers %v", asked.APIVersion, execCredentialAPIVersions)
}

// cachedOrNewCredential is cluster id's cached credential while it has
// more than credentialRenewBefore left, else a new one (cached); and when
// its certificate expires.
func (a *app) cachedOrNewCredential(ctx context.Context, c *Client, id int64) (cachedCredential, time.Time, error) {
	if cred, expires, ok := readCachedCredential(a.credentialCachePath(c, id)); ok && expires.Sub(a.now()) > credentialRenewBefore {
		return cred, expires, nil
	}
	cred, err := a.firstCredential(ctx, c, id)
	return cred, cred.Issued.ExpiresAt, err
}

// firstCredential is a new credential of cluster id, cached for the
// plugin's next runs.
func (a *app) firstCredential(ctx context.Context, c *Client, id int64) (cachedCredential, error) {
	cred, err := newCredential(ctx, c, id)
	if err != nil {
		return cachedCredential{}, err
	}
	b, err := json.Marshal(cred)
	if err != nil {
		return cachedCredential{}, err
	}
	if path := a.credentialCachePath(c, id); writeFileAtomic(path, b) != nil {
		// Still good for this run: the next one asks again.
		fmt.Fprintf(a.stderr, "warning: cannot cache the credential in %s\n", path)
	}
	return cred, nil
}

// credentialCachePath is where cluster id's credential is cached for
// c's API and token: one file per API, cluster and token (a hash of the
// three, never the token), so another token never reuses the certificate
// of whom an earlier one named.
func (a *app) credentialCachePath(c *Client, id int64) string {
	sum := sha256.Sum256([]byte(c.BaseURL + "\n" + strconv.FormatInt(id, 10) + "\n" + c.Token))
	return filepath.Join(a.cacheDir, "k8sapi", "credentials", fmt.Sprintf("cluster-%d-%s.json", id, hex.EncodeToString(sum[:8])))
}

// readCachedCredential is the credential cached at path and its
// certificate's expiry; not ok when there is none or it does not read
// (a new one replaces it).
func readCachedCredential(path string) (cachedCredential, time.Time, bool) {
	var cred cachedCredential
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &cred) != nil {
		return cachedCredential{}, time.Time{}, false
	}
	block, _ := pem.Decode([]byte(cred.Issued.Certificate))
	if block == nil {
		return cachedCredential{}, time.Time{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return cachedCredential{}, time.Time{}, false
	}
	return cred, cert.NotAfter, true
}

// newCredential makes a P-256 key here and has cluster id's CA sign it.
func newCredential(ctx context.Context, c *Client, id int64) (cachedCredential, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cachedCredential{}, err
	}
	// No subject: k8sapi names who asked.
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return cachedCredential{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return cachedCredential{}, err
	}
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	issued, _, err := c.IssueCredential(ctx, id, csr)
	if err != nil {
		return cachedCredential{}, err
	}
	return cachedCredential{Issued: issued, KeyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))}, nil
}

// IssueCredential has cluster id's CA sign csr (PEM) for 15 minutes.
func (c *Client) IssueCredential(ctx context.Context, id int64, csr string) (apitypes.IssuedCredential, *response, error) {
	var out apitypes.IssuedCredential
	req := request{Method: http.MethodPost, Path: clusterPath(id) + "/credentials", Body: apitypes.CredentialRequest{CSR: csr}}
	res, err := c.call(ctx, req, &out)
	return out, res, err
}
