package integration

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

// issuedKubeconfig is the 201 of POST /clusters/{id}/kubeconfig, with
// the request id it was answered under.
type issuedKubeconfig struct {
	apitypes.IssuedKubeconfig
	requestID string
}

// kubeconfigIssue is one item of GET /clusters/{id}/kubeconfigs.
type kubeconfigIssue = apitypes.KubeconfigIssue

func kubeconfigPath(id int64) string  { return "/clusters/" + itoa(id) + "/kubeconfig" }
func kubeconfigsPath(id int64) string { return "/clusters/" + itoa(id) + "/kubeconfigs" }

// issueKubeconfig asks for an admin kubeconfig of cluster id as org's
// operator, failing the test on anything but a 201.
func (s *stack) issueKubeconfig(org, id int64, body string) issuedKubeconfig {
	s.t.Helper()
	r := stacktest.Do(s.t, http.MethodPost, s.api.URL+kubeconfigPath(id), body, s.Bearer(org))
	if r.Status != http.StatusCreated {
		s.t.Fatalf("POST %s %s = %d %s", kubeconfigPath(id), body, r.Status, r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		s.t.Errorf("Cache-Control %q, want no-store", cc)
	}
	var k issuedKubeconfig
	r.JSON(s.t, &k)
	k.requestID = r.Header.Get("X-Request-Id")
	return k
}

// kubeconfigIssues lists cluster id's recorded issues as org's operator.
func (s *stack) kubeconfigIssues(org, id int64) []kubeconfigIssue {
	s.t.Helper()
	r := stacktest.Do(s.t, http.MethodGet, s.api.URL+kubeconfigsPath(id), "", s.Bearer(org))
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET %s = %d %s", kubeconfigsPath(id), r.Status, r.Body)
	}
	var list struct {
		Kubeconfigs []kubeconfigIssue `json:"kubeconfigs"`
	}
	r.JSON(s.t, &list)
	return list.Kubeconfigs
}

// adminIdentity is what an admin kubeconfig says: its single cluster, user
// and context, and the client certificate and key of its user.
type adminIdentity struct {
	cluster, user, context, server string
	ca                             []byte
	cert                           *x509.Certificate
	key                            crypto.Signer
}

func loadAdmin(t *testing.T, kubeconfig string) adminIdentity {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		t.Fatalf("invalid kubeconfig: %v", err)
	}
	if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
		t.Fatalf("kubeconfig holds %d clusters, %d users, %d contexts; want one each", len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts))
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("current context %q is not in the kubeconfig", cfg.CurrentContext)
	}
	user, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	cert, err := pki.ParseCert(user.ClientCertificateData)
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.ParseKey(user.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	return adminIdentity{cluster: ctx.Cluster, user: ctx.AuthInfo, context: cfg.CurrentContext, server: cluster.Server,
		ca: cluster.CertificateAuthorityData, cert: cert, key: key}
}

// clusterCA is the cluster CA's certificate as stored with the cluster.
func (s *stack) clusterCA(t *testing.T, id int64) *x509.Certificate {
	t.Helper()
	var pem string
	if err := s.pool.QueryRow(context.Background(), `SELECT ca_cert FROM kube_clusters WHERE id = $1`, id).Scan(&pem); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCert([]byte(pem))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// checkAdmin holds an admin kubeconfig of cluster res to the rules every
// one keeps: named after the cluster, for its shared name, a certificate
// of who asked in k8sapi's cluster-admins group (bound to cluster-admin by
// RBAC), signed by the cluster CA, valid until expires and not a second
// longer.
func (s *stack) checkAdmin(t *testing.T, kubeconfig string, res apitypes.FoundingResult, org int64, expires time.Time) adminIdentity {
	t.Helper()
	a := loadAdmin(t, kubeconfig)
	if a.cluster != res.Name || a.user != res.Name+"-admin" || a.context != res.Name {
		t.Errorf("cluster %q, user %q, context %q; want %q, %q, %q", a.cluster, a.user, a.context, res.Name, res.Name+"-admin", res.Name)
	}
	if a.server != "https://"+res.ControlPlaneDNSName+":6443" {
		t.Errorf("server %q", a.server)
	}
	who := auth.NewPrincipal(org, 0, s.Token(org)).Who()
	if a.cert.Subject.CommonName != "k8sapi:"+who || !slices.Equal(a.cert.Subject.Organization, []string{pki.ClusterAdminsGroup}) {
		t.Errorf("subject %v, want CN=k8sapi:%s O=%s", a.cert.Subject, who, pki.ClusterAdminsGroup)
	}
	if !a.cert.NotAfter.Equal(expires) {
		t.Errorf("certificate expires %v, want %v", a.cert.NotAfter, expires)
	}
	if !a.key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(a.cert.PublicKey) {
		t.Error("the key is not the certificate's")
	}
	ca := s.clusterCA(t, res.ClusterID)
	if caInKubeconfig, err := pki.ParseCert(a.ca); err != nil || !caInKubeconfig.Equal(ca) {
		t.Errorf("certificate-authority-data is not the cluster CA (%v)", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	verify := func(at time.Time) error {
		_, err := a.cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(expires.Add(-time.Second)); err != nil {
		t.Errorf("a second before expires_at the certificate does not verify: %v", err)
	}
	var invalid x509.CertificateInvalidError
	if err := verify(expires.Add(time.Second)); !errors.As(err, &invalid) || invalid.Reason != x509.Expired {
		t.Errorf("a second after expires_at the certificate verifies (%v), want it expired", err)
	}
	return a
}

// An operator gets an admin kubeconfig again whenever they ask: short-lived
// (the ttl asked, 12 h by default, the founding's too), named after the
// cluster, in k8sapi's cluster-admins group, of who asked, and each issue recorded and listed
// newest first with who, when, serial, expiry and request id.
func TestIssueAdminKubeconfigs(t *testing.T) {
	s := newStack(t)
	start := s.clock.Now().Truncate(time.Second)
	res := s.Found(1, stacktest.ThreeNodes)
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()

	// The founding's own: 12 hours, no longer a year (the stack's leaf
	// lifetime is the cert table's).
	founded := loadAdmin(t, res.Kubeconfig)
	if life := founded.cert.NotAfter.Sub(founded.cert.NotBefore); life != adminkubeconfig.DefaultKubeconfigTTL+5*time.Minute {
		t.Errorf("the founding's kubeconfig lives %v (with 5 min backdated), want %v", life, adminkubeconfig.DefaultKubeconfigTTL)
	}
	s.checkAdmin(t, res.Kubeconfig, res, 1, founded.cert.NotAfter)

	// Asked for: no body (the default), a ttl, the bounds.
	asked := []struct {
		body string
		ttl  time.Duration
	}{
		{"", adminkubeconfig.DefaultKubeconfigTTL},
		{`{"ttl":"30m"}`, 30 * time.Minute},
		{`{}`, adminkubeconfig.DefaultKubeconfigTTL},
		{`{"ttl":"5m"}`, adminkubeconfig.MinKubeconfigTTL},
		{`{"ttl":"168h"}`, adminkubeconfig.MaxKubeconfigTTL},
		{`{"ttl":"1h30m"}`, 90 * time.Minute},
	}
	var issued []issuedKubeconfig
	for _, a := range asked {
		before := s.clock.Now().Truncate(time.Second)
		k := s.issueKubeconfig(1, res.ClusterID, a.body)
		after := s.clock.Now()
		if k.ClusterID != res.ClusterID || k.Name != res.Name || k.User != res.Name+"-admin" || k.Context != res.Name {
			t.Errorf("%s: answered %+v", a.body, k)
		}
		if k.ExpiresAt.Before(before.Add(a.ttl)) || k.ExpiresAt.After(after.Add(a.ttl)) {
			t.Errorf("%s: expires_at %v, want %v after the request", a.body, k.ExpiresAt, a.ttl)
		}
		id := s.checkAdmin(t, k.Kubeconfig, res, 1, k.ExpiresAt)
		if id.cert.SerialNumber.Text(16) != k.Serial {
			t.Errorf("%s: serial %s, the certificate's is %x", a.body, k.Serial, id.cert.SerialNumber)
		}
		if id.cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(founded.cert.PublicKey) {
			t.Errorf("%s: the key of the founding's kubeconfig again", a.body)
		}
		issued = append(issued, k)
	}

	// A replay of the founding issues (and records) a fresh one too.
	h := s.Bearer(1)
	h["Idempotency-Key"] = "kubeconfig-replay"
	var replayed apitypes.FoundingResult
	var replayRequest string
	for range 2 {
		r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`, h)
		if r.Status != http.StatusCreated {
			t.Fatalf("create with a key = %d %s", r.Status, r.Body)
		}
		r.JSON(t, &replayed)
		replayRequest = r.Header.Get("X-Request-Id")
	}
	s.checkAdmin(t, replayed.Kubeconfig, replayed, 1, loadAdmin(t, replayed.Kubeconfig).cert.NotAfter)

	// The record: the founding's issue and every one asked for, newest
	// first; exactly what the answers said, by whom, with their request ids.
	list := s.kubeconfigIssues(1, res.ClusterID)
	if len(list) != len(asked)+1 {
		t.Fatalf("%d issues recorded, want %d: %+v", len(list), len(asked)+1, list)
	}
	slices.Reverse(list) // oldest first, as issued
	if list[0].Serial != founded.cert.SerialNumber.Text(16) || !list[0].ExpiresAt.Equal(founded.cert.NotAfter) || list[0].IssuedBy != who {
		t.Errorf("the founding's issue is recorded as %+v", list[0])
	}
	for i, k := range issued {
		got := list[i+1]
		if got.Serial != k.Serial || !got.ExpiresAt.Equal(k.ExpiresAt) || got.IssuedBy != who || got.RequestID != k.requestID {
			t.Errorf("issue %d recorded as %+v, answered %+v (request %s)", i, got, k, k.requestID)
		}
	}
	for i, got := range list {
		if got.IssuedAt.Before(start) || got.IssuedAt.After(s.clock.Now()) || (i > 0 && got.IssuedAt.Before(list[i-1].IssuedAt)) {
			t.Errorf("issue %d issued_at %v", i, got.IssuedAt)
		}
	}
	if !strings.HasPrefix(who, "org:1:token:") || len(who) != len("org:1:token:")+12 {
		t.Errorf("issued_by %q", who)
	}
	// Both answers of the keyed founding were recorded, the replay's with
	// its own request.
	replays := s.kubeconfigIssues(1, replayed.ClusterID)
	if len(replays) != 2 || replays[0].RequestID != replayRequest || replays[0].Serial != loadAdmin(t, replayed.Kubeconfig).cert.SerialNumber.Text(16) {
		t.Errorf("the keyed founding's record %+v (replay request %s)", replays, replayRequest)
	}
	assertNoPlaintextKeys(t, s)
}

// ttl out of its bounds, or no duration, or a body that is no request, is a
// 400 naming what is wrong; nothing is issued or recorded.
func TestAdminKubeconfigTTLBounds(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	for _, c := range []struct{ body, code, mentions string }{
		{`{"ttl":"4m59s"}`, "invalid_request", "ttl: must be between 5m and 168h"},
		{`{"ttl":"168h0m1s"}`, "invalid_request", "ttl: must be between 5m and 168h"},
		{`{"ttl":"8d"}`, "invalid_request", "ttl: must be a Go duration"},
		{`{"ttl":"-1h"}`, "invalid_request", "ttl: must be between"},
		{`{"ttl":"0"}`, "invalid_request", "ttl: must be between"},
		{`{"ttl":""}`, "invalid_request", "ttl: must be a Go duration"},
		{`{"ttl":"twelve hours"}`, "invalid_request", "ttl: must be a Go duration"},
		{`{"ttl":43200}`, "invalid_field", "ttl"},
		{`{"ttl":null}`, "", ""}, // JSON null is absent: the default
		{`{"ttl":"1h","org_id":2}`, "invalid_field", "org_id"},
		{`ttl=1h`, "invalid_json", ""},
		{`{"ttl":"1h"}{}`, "invalid_json", ""},
		{`{"ttl":"1h"` + strings.Repeat(" ", 70000) + `}`, "body_too_large", ""},
	} {
		r := stacktest.Do(t, http.MethodPost, s.api.URL+kubeconfigPath(res.ClusterID), c.body, s.Bearer(1))
		if c.code == "" {
			if r.Status != http.StatusCreated {
				t.Errorf("%.40s = %d %s, want 201", c.body, r.Status, r.Body)
			}
			continue
		}
		want := http.StatusBadRequest
		if c.code == "body_too_large" {
			want = http.StatusRequestEntityTooLarge
		}
		if r.Status != want || r.ErrorCode(t) != c.code || !strings.Contains(string(r.Body), c.mentions) {
			t.Errorf("%.40s = %d %s, want %d %s naming %q", c.body, r.Status, r.Body, want, c.code, c.mentions)
		}
		if strings.Contains(string(r.Body), "PRIVATE KEY") {
			t.Errorf("%.40s: a refusal carries a key", c.body)
		}
	}
	if n := len(s.kubeconfigIssues(1, res.ClusterID)); n != 2 { // the founding's and the null ttl's
		t.Errorf("%d issues recorded, want 2", n)
	}
}

// A cluster's kubeconfigs are its org's only, for an operator only, and only
// while it is active; its record stays its org's, and outlives it.
func TestAdminKubeconfigsBelongToTheOrgsOperator(t *testing.T) {
	s := newStack(t)
	c1 := s.Found(1, stacktest.ThreeNodes)
	c2 := s.Found(2, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	s.issueKubeconfig(1, c1.ClusterID, "")
	imds, access := s.VMCredentials(c1.ControlPlaneVMIDs[0])
	vmToken := map[string]string{"Authorization": "Bearer " + access, "X-exc-imds-token": imds}
	for _, c := range []struct {
		name, method, path string
		headers            map[string]string
		status             int
		code               string
	}{
		{"org 2 issues org 1's", "POST", kubeconfigPath(c1.ClusterID), s.Bearer(2), 404, "not_found"},
		{"org 2 lists org 1's", "GET", kubeconfigsPath(c1.ClusterID), s.Bearer(2), 404, "not_found"},
		{"org 1 issues org 2's", "POST", kubeconfigPath(c2.ClusterID), s.Bearer(1), 404, "not_found"},
		{"no such cluster", "POST", kubeconfigPath(987654321), s.Bearer(1), 404, "not_found"},
		{"no such cluster's record", "GET", kubeconfigsPath(987654321), s.Bearer(1), 404, "not_found"},
		{"the cluster's own VM issues", "POST", kubeconfigPath(c1.ClusterID), vmToken, 403, "token_scope"},
		{"the cluster's own VM lists", "GET", kubeconfigsPath(c1.ClusterID), vmToken, 403, "token_scope"},
		{"no token", "POST", kubeconfigPath(c1.ClusterID), nil, 401, "unauthenticated"},
	} {
		r := stacktest.Do(t, c.method, s.api.URL+c.path, "", c.headers)
		if r.Status != c.status || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	if n := len(s.kubeconfigIssues(1, c1.ClusterID)); n != 2 {
		t.Errorf("org 1's cluster records %d issues, want 2 (the founding's and its operator's)", n)
	}
	if n := len(s.kubeconfigIssues(2, c2.ClusterID)); n != 1 {
		t.Errorf("org 2's cluster records %d issues, want its founding's", n)
	}

	// Deleted: no kubeconfig any more (409), the record stays.
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(c1.ClusterID), "", s.Bearer(1)); r.Status != 200 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	r := stacktest.Do(t, http.MethodPost, s.api.URL+kubeconfigPath(c1.ClusterID), "", s.Bearer(1))
	if r.Status != http.StatusConflict || r.ErrorCode(t) != "cluster_not_active" || !strings.Contains(string(r.Body), "deleted") {
		t.Errorf("issue for a deleted cluster = %d %s, want 409 cluster_not_active", r.Status, r.Body)
	}
	if n := len(s.kubeconfigIssues(1, c1.ClusterID)); n != 2 {
		t.Errorf("the deleted cluster records %d issues, want the 2 it had", n)
	}
	// The write itself refuses a cluster that is no longer active, whatever
	// its caller read before (a deletion that began meanwhile).
	err := s.founder.Store.RecordKubeconfigIssue(context.Background(), store.KubeconfigIssue{ClusterID: c1.ClusterID, Serial: "abc",
		IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), IssuedBy: "org:1:token:000000000000"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("recording an issue of a deleted cluster: %v, want ErrNotFound", err)
	}
}

// An issue that cannot be recorded is not answered: not by the route, not
// by a founding (which is done: the operator asks the route once the
// database is back).
func TestUnrecordedAdminKubeconfigIsNotServed(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	res := s.Found(1, stacktest.ThreeNodes)
	if _, err := s.pool.Exec(ctx, `REVOKE INSERT ON admin_kubeconfigs FROM k8sapi_create_cluster`); err != nil {
		t.Fatal(err)
	}
	r := stacktest.Do(t, http.MethodPost, s.api.URL+kubeconfigPath(res.ClusterID), "", s.Bearer(1))
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode(t) != "database_unavailable" || strings.Contains(string(r.Body), "kubeconfig") {
		t.Errorf("issue without its record = %d %s, want 503 and no kubeconfig", r.Status, r.Body)
	}
	r = s.Create(1, stacktest.ThreeNodes)
	if r.Status != http.StatusServiceUnavailable || strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Errorf("founding without its kubeconfig's record = %d %s, want 503 and no kubeconfig", r.Status, r.Body)
	}
	var founded int64
	if err := s.pool.QueryRow(ctx, `SELECT max(id) FROM kube_clusters WHERE status = 'active'`).Scan(&founded); err != nil || founded == res.ClusterID {
		t.Fatalf("the founding did not end active (%v)", err)
	}
	if _, err := s.pool.Exec(ctx, `GRANT INSERT (kube_cluster_id, serial, issued_at, expires_at, issued_by, request_id)
		ON admin_kubeconfigs TO k8sapi_create_cluster`); err != nil {
		t.Fatal(err)
	}
	if n := len(s.kubeconfigIssues(1, res.ClusterID)) + len(s.kubeconfigIssues(1, founded)); n != 1 {
		t.Errorf("%d issues recorded, want the first founding's only", n)
	}
	s.issueKubeconfig(1, founded, "")
	if n := len(s.kubeconfigIssues(1, founded)); n != 1 {
		t.Errorf("the second cluster records %d issues once the database takes them, want 1", n)
	}
}

// Two clusters' admin kubeconfigs merge (KUBECONFIG=a:b, what kubectl
// config view --flatten and --merge do) into two clusters, two users and
// two contexts, each context keeping its own cluster's credential: the
// names are the cluster's, never a shared "cluster-admin".
func TestAdminKubeconfigsOfTwoClustersMerge(t *testing.T) {
	s := newStack(t)
	a := s.Found(1, stacktest.ThreeNodes)
	b := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	c := s.Found(2, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2}`)
	dir := t.TempDir()
	write := func(name, kubeconfig string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Founding answers and issued ones alike, of two orgs.
	ka := s.issueKubeconfig(1, a.ClusterID, `{"ttl":"1h"}`)
	files := map[string]string{
		a.Name: write("a", ka.Kubeconfig),
		b.Name: write("b", b.Kubeconfig),
		c.Name: write("c", c.Kubeconfig),
	}
	want := map[string]adminIdentity{
		a.Name: loadAdmin(t, ka.Kubeconfig), b.Name: loadAdmin(t, b.Kubeconfig), c.Name: loadAdmin(t, c.Kubeconfig),
	}
	rules := clientcmd.ClientConfigLoadingRules{Precedence: []string{files[a.Name], files[b.Name], files[c.Name]}}
	merged, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(merged); err != nil {
		t.Fatal(err)
	}
	if len(merged.Clusters) != 3 || len(merged.AuthInfos) != 3 || len(merged.Contexts) != 3 {
		t.Fatalf("merged: %d clusters, %d users, %d contexts; want 3 of each", len(merged.Clusters), len(merged.AuthInfos), len(merged.Contexts))
	}
	for name, w := range want {
		ctx := merged.Contexts[name]
		if ctx == nil {
			t.Errorf("no context %s after merging", name)
			continue
		}
		user, cluster := merged.AuthInfos[ctx.AuthInfo], merged.Clusters[ctx.Cluster]
		cert, err := pki.ParseCert(user.ClientCertificateData)
		if err != nil || !cert.Equal(w.cert) || cluster.Server != w.server || string(cluster.CertificateAuthorityData) != string(w.ca) {
			t.Errorf("context %s uses another cluster's user or cluster after merging (%v)", name, err)
		}
		// The context reaches its own cluster: its CA signed the user's
		// certificate, and no other cluster's did.
		for other, o := range want {
			pool := x509.NewCertPool()
			ca, _ := pki.ParseCert(o.ca)
			pool.AddCert(ca)
			_, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			if (err == nil) != (other == name) {
				t.Errorf("context %s's certificate verified by %s's CA: %v", name, other, err)
			}
		}
	}
	// The first file's current context wins, as kubectl's merge does; each
	// context is selectable by the cluster's name.
	if merged.CurrentContext != a.Name {
		t.Errorf("current context %q, want %q", merged.CurrentContext, a.Name)
	}
	for name := range want {
		restCfg, err := clientcmd.NewNonInteractiveClientConfig(*merged, name, nil, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cert, _ := pki.ParseCert(restCfg.CertData); cert == nil || !cert.Equal(want[name].cert) {
			t.Errorf("--context %s authenticates with another cluster's certificate", name)
		}
	}
}

// A cluster founded before its RBAC bound k8sapi's cluster-admins group
// (migration 027 marks it system:masters) keeps giving its operators the
// one group its API server grants: a kubeconfig and a credential both
// name system:masters there, and k8sapi's group on every newer cluster.
func TestOlderClustersKeepTheirAdminGroup(t *testing.T) {
	s := newStack(t)
	older, newer := s.Found(1, stacktest.ThreeNodes), s.Found(1, stacktest.ThreeNodes)
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET admin_group = 'system:masters' WHERE id = $1`, older.ClusterID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    int64
		group string
	}{{older.ClusterID, "system:masters"}, {newer.ClusterID, pki.ClusterAdminsGroup}} {
		k := loadAdmin(t, s.issueKubeconfig(1, c.id, "").Kubeconfig)
		if !slices.Equal(k.cert.Subject.Organization, []string{c.group}) {
			t.Errorf("cluster %d's admin kubeconfig is in %v, want %s", c.id, k.cert.Subject.Organization, c.group)
		}
		r := s.askCredential(c.id, signedCSR(t, newKey(t), &x509.CertificateRequest{}), s.Bearer(1))
		var got apitypes.IssuedCredential
		r.JSON(t, &got)
		if r.Status != http.StatusCreated || !slices.Equal(got.Groups, []string{c.group}) {
			t.Errorf("cluster %d's credential: %d %s, want groups [%s]", c.id, r.Status, r.Body, c.group)
		}
	}
}
