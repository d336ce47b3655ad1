package integration

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/cli"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
)

func credentialsPath(id int64) string { return "/clusters/" + itoa(id) + "/credentials" }

// credentialBody is the route's body over csr.
func credentialBody(t *testing.T, csr string) string {
	t.Helper()
	b, err := json.Marshal(apitypes.CredentialRequest{CSR: csr})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// askCredential sends csr for cluster id with headers.
func (s *stack) askCredential(id int64, csr string, headers map[string]string) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodPost, s.api.URL+credentialsPath(id), credentialBody(s.t, csr), headers)
}

func newKey(t *testing.T) crypto.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// An operator's CSR is signed for 15 minutes over its own key, as who
// asked in k8sapi's cluster-admins group, with the cluster's endpoint and
// CA; the answer holds no key, and the issue is recorded and in the trail.
func TestCredentialSignsTheOperatorsKeyFor15Minutes(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var issued []apitypes.IssuedCredential
	for _, c := range []struct {
		name    string
		key     crypto.Signer
		subject pkix.Name
	}{
		{"P-256, no subject", newKey(t), pkix.Name{}},
		{"Ed25519, its own name", edKey, pkix.Name{CommonName: "k8sapi:" + who, Organization: []string{pki.ClusterAdminsGroup}}},
		{"RSA-2048, no subject", rsa2048, pkix.Name{}},
	} {
		before := s.clock.Now().Truncate(time.Second) // a certificate's times are whole seconds
		r := s.askCredential(res.ClusterID, signedCSR(t, c.key, &x509.CertificateRequest{Subject: c.subject}), s.Bearer(1))
		if r.Status != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" || strings.Contains(string(r.Body), "PRIVATE KEY") {
			t.Fatalf("%s: %d %s (Cache-Control %q)", c.name, r.Status, r.Body, r.Header.Get("Cache-Control"))
		}
		after := s.clock.Now()
		var got apitypes.IssuedCredential
		r.JSON(t, &got)
		cert, err := pki.ParseCert([]byte(got.Certificate))
		if err != nil {
			t.Fatal(err)
		}
		if got.ClusterID != res.ClusterID || got.Name != res.Name || got.Server != "https://"+res.ControlPlaneDNSName+":6443" ||
			got.User != "k8sapi:"+who || !slices.Equal(got.Groups, []string{pki.ClusterAdminsGroup}) || got.Serial != cert.SerialNumber.Text(16) {
			t.Errorf("%s: answered %+v", c.name, got)
		}
		if cert.Subject.CommonName != got.User || !slices.Equal(cert.Subject.Organization, got.Groups) || len(cert.DNSNames)+len(cert.IPAddresses) > 0 {
			t.Errorf("%s: certificate names %v (SANs %v %v)", c.name, cert.Subject, cert.DNSNames, cert.IPAddresses)
		}
		if !cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(c.key.Public()) {
			t.Errorf("%s: the certificate is not over the request's key", c.name)
		}
		if cert.NotAfter.Before(before.Add(15*time.Minute)) || cert.NotAfter.After(after.Add(15*time.Minute)) || !cert.NotAfter.Equal(got.ExpiresAt) {
			t.Errorf("%s: valid until %v, expires_at %v; want 15 minutes after the request (%v)", c.name, cert.NotAfter, got.ExpiresAt, before)
		}
		ca := s.clusterCA(t, res.ClusterID)
		if inAnswer, err := pki.ParseCert([]byte(got.CertificateAuthority)); err != nil || !inAnswer.Equal(ca) {
			t.Errorf("%s: certificate_authority is not the cluster CA (%v)", c.name, err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: not a client certificate of the cluster CA: %v", c.name, err)
		}
		issued = append(issued, got)
	}
	// Recorded with the admin kubeconfigs (after the founding's), newest
	// first, and in the cluster's trail as credential.issue.
	list := s.kubeconfigIssues(1, res.ClusterID)
	if len(list) != len(issued)+1 {
		t.Fatalf("%d issues recorded, want %d", len(list), len(issued)+1)
	}
	for i, k := range issued {
		got := list[len(issued)-1-i]
		if got.Serial != k.Serial || !got.ExpiresAt.Equal(k.ExpiresAt) || got.IssuedBy != who || got.RequestID == "" {
			t.Errorf("credential %d recorded as %+v, answered %+v", i, got, k)
		}
	}
	n := 0
	for _, e := range s.auditEvents(1, res.ClusterID) {
		if e.Action == "credential.issue" && e.Outcome == "succeeded" && e.Status == http.StatusCreated && e.Principal == who {
			n++
		}
	}
	if n != len(issued) {
		t.Errorf("the trail holds %d credential.issue events, want %d", n, len(issued))
	}
	assertNoPlaintextKeys(t, s)
}

// A credential for a long-lived stack (LEAF_CERT_LIFETIME a year) lives 15
// minutes still: the operator's bound is the cert table's, not the leaves'.
func TestCredentialLifetimeIsNotTheLeaves(t *testing.T) {
	s := newStack(t, func(c *stacktest.Config) { c.Leaves.Lifetime = 30 * 24 * time.Hour })
	res := s.Found(1, stacktest.ThreeNodes)
	r := s.askCredential(res.ClusterID, signedCSR(t, newKey(t), &x509.CertificateRequest{}), s.Bearer(1))
	var got apitypes.IssuedCredential
	r.JSON(t, &got)
	if r.Status != http.StatusCreated || time.Until(got.ExpiresAt) > 15*time.Minute {
		t.Errorf("%d, expires %v; want 201 within 15 minutes", r.Status, got.ExpiresAt)
	}
}

// A request over a key outside the policy, for another identity, or that
// is no request at all signs nothing and records nothing; a revoked or
// expired token, a VM's, none, or another org's gets no credential.
func TestCredentialRefusals(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	res := s.Found(1, stacktest.ThreeNodes)
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := newKey(t)
	as := func(name pkix.Name, dns ...string) string {
		return signedCSR(t, good, &x509.CertificateRequest{Subject: name, DNSNames: dns})
	}
	other := *newKey(t).(*ecdsa.PrivateKey)
	badSig := strings.Replace(signedCSR(t, &other, &x509.CertificateRequest{}), "A", "B", 1)
	bearer := s.Bearer(1)
	for _, c := range []struct {
		name, csr, code, says string
		status                int
	}{
		{"RSA-1024", signedCSR(t, rsa1024, &x509.CertificateRequest{}), "invalid_request", "csr: certificate request: the key is not one k8sapi signs: it is RSA of 1024 bits", 400},
		{"P-521", signedCSR(t, p521, &x509.CertificateRequest{}), "invalid_request", "it is ECDSA P-521", 400},
		{"system:masters", as(pkix.Name{Organization: []string{"system:masters"}}), "csr_not_allowed", `csr: organization "system:masters" is not "k8sapi:cluster-admins"`, 403},
		{"another user", as(pkix.Name{CommonName: "k8sapi:org:2:token:000000000000"}), "csr_not_allowed", `csr: common name "k8sapi:org:2:token:000000000000" is not the caller's ("k8sapi:` + who + `")`, 403},
		{"admin of the nodes", as(pkix.Name{CommonName: "cluster-admin", Organization: []string{pki.ClusterAdminsGroup}}), "csr_not_allowed", "common name", 403},
		{"a SAN", as(pkix.Name{}, "kubernetes"), "csr_not_allowed", "subject alternative names", 403},
		{"no CSR", "", "invalid_request", "csr: required", 400},
		{"not PEM", "MIIB", "invalid_request", "csr: not one PEM certificate request", 400},
		{"a bad signature", badSig, "invalid_request", "csr:", 400},
		{"too long", strings.Repeat("x", 9000), "invalid_request", "csr: must be at most 8192 bytes", 400},
	} {
		r := s.askCredential(res.ClusterID, c.csr, bearer)
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		r.JSON(t, &e)
		if r.Status != c.status || r.ErrorCode(t) != c.code || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s: %d %s, want %d %s saying %q", c.name, r.Status, r.Body, c.status, c.code, c.says)
		}
	}
	// The route's body is strict like every other's.
	for body, code := range map[string]string{`{"csr":"x","ttl":"1h"}`: "invalid_field", `{"csr":1}`: "invalid_field", `csr`: "invalid_json"} {
		if r := stacktest.Do(t, http.MethodPost, s.api.URL+credentialsPath(res.ClusterID), body, bearer); r.Status != 400 || r.ErrorCode(t) != code {
			t.Errorf("body %s: %d %s, want 400 %s", body, r.Status, r.Body, code)
		}
	}

	issue := func(ttl time.Duration) string {
		tok, err := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	revoked, expired := issue(time.Hour), issue(-time.Minute)
	if r := s.askCredential(res.ClusterID, as(pkix.Name{}), map[string]string{"Authorization": "Bearer " + revoked}); r.Status != http.StatusCreated {
		t.Fatalf("the token before its revocation: %d %s", r.Status, r.Body)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, simulator.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	imds, access := s.VMCredentials(res.ControlPlaneVMIDs[0])
	c2 := s.Found(2, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	for _, c := range []struct {
		name    string
		id      int64
		headers map[string]string
		status  int
		code    string
	}{
		{"revoked", res.ClusterID, map[string]string{"Authorization": "Bearer " + revoked}, 401, "unauthenticated"},
		{"expired", res.ClusterID, map[string]string{"Authorization": "Bearer " + expired}, 401, "unauthenticated"},
		{"no token", res.ClusterID, nil, 401, "unauthenticated"},
		{"the cluster's VM", res.ClusterID, map[string]string{"Authorization": "Bearer " + access, "X-exc-imds-token": imds}, 403, "token_scope"},
		{"another org's cluster", c2.ClusterID, bearer, 404, "not_found"},
		{"no such cluster", 987654321, bearer, 404, "not_found"},
	} {
		r := s.askCredential(c.id, as(pkix.Name{}), c.headers)
		if r.Status != c.status || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	// The founding's, and the revoked token's one while it was good.
	if n := len(s.kubeconfigIssues(1, res.ClusterID)); n != 2 {
		t.Errorf("%d issues recorded, want 2", n)
	}

	// A cluster being deleted issues none; its issue cannot be recorded.
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", bearer); r.Status != 200 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	if r := s.askCredential(res.ClusterID, as(pkix.Name{}), bearer); r.Status != http.StatusConflict || r.ErrorCode(t) != "cluster_not_active" {
		t.Errorf("a deleted cluster's credential: %d %s, want 409 cluster_not_active", r.Status, r.Body)
	}
}

// cliAs runs the operator's CLI against the stack with token.
func (s *stack) cliAs(token string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Main(append([]string{"--url", s.api.URL, "--token", token}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// The CLI's default kubeconfig, over the real routes: its exec plugin
// prints a credential of the cluster CA over a key that never left the
// CLI, naming who asked in k8sapi's group, for at most 15 minutes; once
// the token is revoked, no new credential is had (kubectl fails once the
// cached one, at most 15 minutes old, expires).
func TestCLIExecCredentialEndsWithTheToken(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	res := s.Found(1, stacktest.ThreeNodes)
	token, err := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if code, out, errOut := s.cliAs(token, "kubeconfig", itoa(res.ClusterID), "--output-file", path); code != 0 {
		t.Fatalf("kubeconfig: %d %s %s", code, out, errOut)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[res.Name+"-admin"]
	if user == nil || user.Exec == nil || user.ClientKeyData != nil || !slices.Contains(user.Exec.Args, s.api.URL) {
		t.Fatalf("kubeconfig user %+v", user)
	}
	if ca, err := pki.ParseCert(cfg.Clusters[res.Name].CertificateAuthorityData); err != nil || !ca.Equal(s.clusterCA(t, res.ClusterID)) {
		t.Fatalf("the kubeconfig's CA is not the cluster's (%v)", err)
	}

	// What kubectl runs: the plugin's arguments, with the same token.
	plugin := func() (int, string, string) { return s.cliAs(token, user.Exec.Args...) }
	code, out, errOut := plugin()
	if code != 0 {
		t.Fatalf("credential: %d %s", code, errOut)
	}
	var ec struct {
		APIVersion, Kind string
		Status           struct {
			ExpirationTimestamp   time.Time
			ClientCertificateData string
			ClientKeyData         string
		}
	}
	if err := json.Unmarshal([]byte(out), &ec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cert, err := pki.ParseCert([]byte(ec.Status.ClientCertificateData))
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.ParseKey([]byte(ec.Status.ClientKeyData))
	if err != nil || !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey) {
		t.Fatalf("the printed key is not the certificate's (%v)", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(s.clusterCA(t, res.ClusterID))
	who := auth.NewPrincipal(1, 0, token).Who()
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil ||
		cert.Subject.CommonName != "k8sapi:"+who || !slices.Equal(cert.Subject.Organization, []string{pki.ClusterAdminsGroup}) ||
		time.Until(cert.NotAfter) > 15*time.Minute || ec.Kind != "ExecCredential" || !ec.Status.ExpirationTimestamp.Before(cert.NotAfter) {
		t.Fatalf("credential %v for %v until %v (%v)", ec.Kind, cert.Subject, cert.NotAfter, err)
	}
	// The key never crossed the wire: no answer of the stack held it, and
	// the record names the kubeconfig's credential (the plugin's run used it).
	if n := len(s.kubeconfigIssues(1, res.ClusterID)); n != 2 {
		t.Errorf("%d issues recorded, want the founding's and the CLI's one", n)
	}

	if _, err := s.pool.Exec(ctx, `UPDATE principal_tokens SET revoked_at = now() WHERE hash = $1`, simulator.HashToken(token)); err != nil {
		t.Fatal(err)
	}
	if code, again, _ := plugin(); code != 0 || again != out {
		t.Fatalf("the cached credential, within its 15 minutes: %d", code)
	}
	// Its 15 minutes over (the cache gone, as an expired one is), the
	// revoked token gets nothing: kubectl's next request fails.
	if err := os.RemoveAll(filepath.Join(cache, "k8sapi")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := plugin(); code != 1 || out != "" || !strings.Contains(errOut, "unauthenticated") {
		t.Fatalf("with the token revoked: %d %q %s", code, out, errOut)
	}
}
