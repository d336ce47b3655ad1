package cli

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// testCA signs the fake API's credentials.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  string
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert, key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// sign is the route's answer to csr (PEM): a certificate over its key
// expiring at notAfter.
func (ca testCA) sign(t *testing.T, csrPEM string, serial int64, notAfter time.Time) apitypes.IssuedCredential {
	t.Helper()
	block, _ := pem.Decode([]byte(csrPEM))
	if block == nil {
		t.Fatalf("the CLI sent no PEM request: %q", csrPEM)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("the CLI's request does not read: %v", err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "k8sapi:org:1:token:abc", Organization: []string{"k8sapi:cluster-admins"}},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return apitypes.IssuedCredential{ClusterID: 5, Name: "exk8s-1-5", Server: "https://exk8s-1-5.k8s.example:6443",
		CertificateAuthority: ca.pem, Certificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		User: "k8sapi:org:1:token:abc", Groups: []string{"k8sapi:cluster-admins"}, Serial: big.NewInt(serial).Text(16), ExpiresAt: notAfter}
}

// credentialAPI is a fake API whose credential route signs what it is
// sent, each answer expiring at the next of notAfters (the last repeats).
func credentialAPI(t *testing.T, ca testCA, notAfters ...time.Time) *fakeAPI {
	f := newFakeAPI(t)
	f.sign = func(body string) reply {
		var req apitypes.CredentialRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatalf("body %s: %v", body, err)
		}
		n := len(f.callsTo("POST /clusters/5/credentials")) // this one included
		return reply{status: 201, body: mustJSON(ca.sign(t, req.CSR, int64(n), notAfters[min(n, len(notAfters))-1]))}
	}
	return f
}

// printedCredential is the ExecCredential a run printed.
func printedCredential(t *testing.T, r result) execCredential {
	t.Helper()
	var ec execCredential
	if err := json.Unmarshal([]byte(r.stdout), &ec); err != nil {
		t.Fatalf("not an ExecCredential: %v\n%s", err, r.stdout)
	}
	return ec
}

// checkPair fails unless ec's key is its certificate's and the CA signed it.
func checkPair(t *testing.T, ec execCredential, ca testCA) *x509.Certificate {
	t.Helper()
	cb, _ := pem.Decode([]byte(ec.Status.ClientCertificateData))
	kb, _ := pem.Decode([]byte(ec.Status.ClientKeyData))
	if cb == nil || kb == nil {
		t.Fatalf("status %+v", ec.Status)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(key.(crypto.Signer).Public()) {
		t.Fatal("the printed key is not the certificate's")
	}
	if err := cert.CheckSignatureFrom(ca.cert); err != nil {
		t.Fatal(err)
	}
	return cert
}

// The credential mode asks once, caches the key and certificate (0600,
// under the user's cache directory) and prints them as an ExecCredential
// that ends a minute before the certificate; while the cache has more than
// a minute left no request is sent; then a new key is made and signed.
// Another token never reuses the cache.
func TestCredentialCachesAndRenews(t *testing.T) {
	ca := newTestCA(t)
	f := credentialAPI(t, ca, now.Add(15*time.Minute), now.Add(30*time.Second), now.Add(15*time.Minute))
	env := map[string]string{"XDG_CACHE_HOME": t.TempDir()}
	asks := func() int { return len(f.callsTo("POST /clusters/5/credentials")) }

	r := runCLI(t, f, env, "credential", "--cluster", "5")
	r.want(t, 0)
	first := printedCredential(t, r)
	cert := checkPair(t, first, ca)
	if first.APIVersion != "client.authentication.k8s.io/v1" || first.Kind != "ExecCredential" ||
		!first.Status.ExpirationTimestamp.Equal(cert.NotAfter.Add(-time.Minute)) {
		t.Fatalf("printed %s %s expiring %v; want v1 ExecCredential ending a minute before %v", first.APIVersion, first.Kind, first.Status.ExpirationTimestamp, cert.NotAfter)
	}
	call := f.callsTo("POST /clusters/5/credentials")[0]
	if call.header.Get("Authorization") != "Bearer op-token" {
		t.Fatalf("asked with %q", call.header.Get("Authorization"))
	}
	var req apitypes.CredentialRequest
	json.Unmarshal([]byte(call.body), &req)
	block, _ := pem.Decode([]byte(req.CSR))
	csr, _ := x509.ParseCertificateRequest(block.Bytes)
	if csr.Subject.String() != "" || csr.PublicKeyAlgorithm != x509.ECDSA {
		t.Fatalf("the request names %q over %v; want no subject, a P-256 key", csr.Subject, csr.PublicKeyAlgorithm)
	}
	files, _ := filepath.Glob(filepath.Join(env["XDG_CACHE_HOME"], "k8sapi", "credentials", "cluster-5-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	assertMode0600(t, files[0])
	if st, _ := os.Stat(filepath.Dir(files[0])); st.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory mode %v", st.Mode())
	}

	// Cached: the same credential, no request.
	r = runCLI(t, f, env, "credential", "--cluster", "5")
	if printedCredential(t, r).Status != first.Status || asks() != 1 {
		t.Fatalf("second run: %d requests, same credential %v", asks(), printedCredential(t, r).Status == first.Status)
	}
	// Once less than a minute is left, a new key is signed: the cache's
	// copy (30 s left) is replaced at the next run too.
	os.WriteFile(files[0], []byte("{"), 0o600) // a cache that does not read is replaced
	r = runCLI(t, f, env, "credential", "--cluster", "5")
	due := printedCredential(t, r)
	if asks() != 2 || due.Status.ClientKeyData == first.Status.ClientKeyData {
		t.Fatalf("a broken cache: %d requests, same key %v", asks(), due.Status.ClientKeyData == first.Status.ClientKeyData)
	}
	r = runCLI(t, f, env, "credential", "--cluster", "5")
	renewed := printedCredential(t, r)
	checkPair(t, renewed, ca)
	if asks() != 3 || renewed.Status.ClientKeyData == due.Status.ClientKeyData || renewed.Status.ExpirationTimestamp.Sub(now) != 14*time.Minute {
		t.Fatalf("a credential 30 s from expiry: %d requests, expiring %v", asks(), renewed.Status.ExpirationTimestamp)
	}
	// Another token: its own credential.
	env["K8SAPI_TOKEN"] = "another-token"
	runCLI(t, f, env, "credential", "--cluster", "5").want(t, 0)
	if asks() != 4 {
		t.Fatalf("another token used the cache (%d requests)", asks())
	}
}

// A refused token (revoked, expired) prints no credential and fails, so
// kubectl fails; so does an ExecCredential version the plugin does not
// speak. v1beta1 is answered in kind.
func TestCredentialRefusedOrMisasked(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST /clusters/5/credentials", reply{status: 401, body: `{"error":{"code":"unauthenticated","message":"the token is revoked","request_id":"r-1"}}`})
	r := runCLI(t, f, nil, "credential", "--cluster", "5")
	r.want(t, 1)
	if r.stdout != "" || !strings.Contains(r.stderr, "unauthenticated: the token is revoked (HTTP 401, request_id r-1)") {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	runCLI(t, f, map[string]string{"KUBERNETES_EXEC_INFO": `{"apiVersion":"client.authentication.k8s.io/v2"}`}, "credential", "--cluster", "5").want(t, 2)
	runCLI(t, f, nil, "credential").want(t, 2)
	runCLI(t, f, nil, "credential", "--cluster", "0").want(t, 2)

	ca := newTestCA(t)
	g := credentialAPI(t, ca, now.Add(15*time.Minute))
	r = runCLI(t, g, map[string]string{"KUBERNETES_EXEC_INFO": `{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false}}`}, "credential", "--cluster", "5")
	if ec := printedCredential(t, r); ec.APIVersion != "client.authentication.k8s.io/v1beta1" {
		t.Fatalf("answered %s", ec.APIVersion)
	}
}

// `k8sapi kubeconfig` writes by default a kubeconfig whose user is the
// exec plugin (no key, no certificate in it): the cluster's endpoint and
// CA from the first credential, which is cached for kubectl's first run;
// the plugin is told the API and config file, never the token.
func TestKubeconfigWritesAnExecEntryByDefault(t *testing.T) {
	ca := newTestCA(t)
	f := credentialAPI(t, ca, now.Add(15*time.Minute))
	cache := t.TempDir()
	path := filepath.Join(t.TempDir(), "kube", "config")
	env := map[string]string{"XDG_CACHE_HOME": cache, "KUBECONFIG": path}
	r := runCLI(t, f, env, "kubeconfig", "5", "--merge")
	r.wantOut(t, "merged cluster exk8s-1-5, user exk8s-1-5-admin and context exk8s-1-5 into "+path+
		"; current context exk8s-1-5, renewed by `k8sapi credential` every 15 minutes while your token is valid")
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "client-key-data") || strings.Contains(string(raw), "op-token") {
		t.Fatalf("the kubeconfig holds a key or the token:\n%s", raw)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		t.Fatal(err)
	}
	cl, user := cfg.Clusters["exk8s-1-5"], cfg.AuthInfos["exk8s-1-5-admin"]
	if cfg.CurrentContext != "exk8s-1-5" || cl.Server != "https://exk8s-1-5.k8s.example:6443" || string(cl.CertificateAuthorityData) != ca.pem {
		t.Fatalf("cluster %+v, current context %s", cl, cfg.CurrentContext)
	}
	wantExec := clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "k8sapi",
		Args: []string{"credential", "--cluster", "5", "--url", f.srv.URL}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	if e := user.Exec; e == nil || e.APIVersion != wantExec.APIVersion || e.Command != wantExec.Command || !slices.Equal(e.Args, wantExec.Args) ||
		e.InteractiveMode != wantExec.InteractiveMode || user.ClientKeyData != nil || user.Token != "" {
		t.Fatalf("user %+v exec %+v", user, user.Exec)
	}
	// kubectl's first run of the plugin uses the credential just cached.
	r = runCLI(t, f, env, "credential", "--cluster", "5")
	checkPair(t, printedCredential(t, r), ca)
	if n := len(f.callsTo("POST /clusters/5/credentials")); n != 1 {
		t.Fatalf("%d requests, want the kubeconfig's one", n)
	}
	// A named config file goes to the plugin; --token does not, and the
	// operator is told.
	conf := filepath.Join(t.TempDir(), "k8sapi.yaml")
	os.WriteFile(conf, []byte("url: "+f.srv.URL+"\ntoken: op-token\n"), 0o600)
	r = runCLI(t, f, env, "--config", conf, "--token", "op-token", "kubeconfig", "5")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "- --config\n      - "+conf+"\n") || strings.Contains(r.stdout, "op-token") ||
		!strings.Contains(r.stderr, "does not get --token") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}
