package integration

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// fixedClock is the injected time every certificate is issued and judged by.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time       { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) Set(d time.Duration)  { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock(start time.Time) *fixedClock { return &fixedClock{t: start} }
func hourLeaves() pki.LeafSchedule {
	return pki.LeafSchedule{Lifetime: time.Hour, RenewBefore: 20 * time.Minute}
}
func renewingStack(t *testing.T) (*stack, *fixedClock) {
	c := newClock(time.Now().Truncate(time.Second))
	s := newStack(t, func(cfg *stacktest.Config) { cfg.Now, cfg.Leaves = c.Now, hourLeaves() })
	return s, c
}

type renewalBody struct {
	Certificates map[string]string `json:"certificates"`
	Renewed      []string          `json:"renewed"`
	NotAfter     time.Time         `json:"not_after"`
	Trust        map[string]string `json:"trust"`
}

type expiryBody struct {
	CertificatesExpireAt *time.Time           `json:"certificates_expire_at"`
	CAsExpireAt          map[string]time.Time `json:"cas_expire_at"`
}

// identityRow is one node_identities row as stored.
type identityRow struct {
	VMID     int64
	Name     string
	Cert     string
	Key      []byte
	NotAfter time.Time
}

func (s *stack) identityRows(t *testing.T) []identityRow {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT n.vm_id, i.name, i.cert, i.key_sealed, i.not_after
		FROM node_identities i JOIN kube_nodes n ON n.id = i.node_id ORDER BY n.vm_id, i.name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []identityRow
	for rows.Next() {
		var r identityRow
		if err := rows.Scan(&r.VMID, &r.Name, &r.Cert, &r.Key, &r.NotAfter); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// clusterRow is everything of the cluster's row as text, to see it untouched.
func (s *stack) clusterRow(t *testing.T, id int64) string {
	t.Helper()
	var row string
	if err := s.pool.QueryRow(context.Background(), `SELECT k::text FROM kube_clusters k WHERE id = $1`, id).Scan(&row); err != nil {
		t.Fatal(err)
	}
	return row
}

func (s *stack) expiryOf(t *testing.T, clusterID int64) expiryBody {
	t.Helper()
	r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(clusterID), "", s.Bearer(1))
	var e expiryBody
	r.JSON(t, &e)
	return e
}

// readyNode founds three nodes, fetches the first one's bundle and reports
// it ready.
func (s *stack) readyNode(t *testing.T) (clusterID int64, vm vmProof) {
	clusterID, vm, _ = s.readyNodeWithBundle(t)
	return clusterID, vm
}

// readyNodeWithBundle is readyNode with the bundle the node fetched before
// it reported ready (its bootstrap is closed after).
func (s *stack) readyNodeWithBundle(t *testing.T) (clusterID int64, vm vmProof, b bundleBody) {
	res := s.Found(1, stacktest.ThreeNodes)
	vm = s.proof(res.ControlPlaneVMIDs[0])
	s.FetchBundle(vm.id, vm.imds, vm.access).JSON(t, &b)
	s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	return res.ClusterID, vm, b
}

// renew asks for vm's renewal as the node would, with the keys of b.
func (s *stack) renew(t *testing.T, vm vmProof, b bundleBody) stacktest.Response {
	t.Helper()
	return s.Renew(vm.id, vm.imds, vm.access, stacktest.RenewalRequest(t, b.Files))
}

func (s *stack) mustRenew(t *testing.T, vm vmProof, b bundleBody) renewalBody {
	t.Helper()
	r := s.renew(t, vm, b)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("renew vm %d: %d %s", vm.id, r.Status, r.Body)
	}
	var got renewalBody
	r.JSON(t, &got)
	signer := got.Trust[bundle.ServiceAccountKeyPath] // a rotation's, of the signer only
	if strings.Contains(strings.Replace(string(r.Body), jsonEscaped(t, signer), "", 1), "PRIVATE KEY") {
		t.Fatal("a renewal answered a private key")
	}
	return got
}

// jsonEscaped is s as a JSON string's contents ("" for "").
func jsonEscaped(t *testing.T, s string) string {
	if s == "" {
		return "\x00never"
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[1 : len(b)-1])
}

// Not due: every renewable certificate comes back as the bundle had it,
// nothing stored changes, and the answer holds certificates only: no key,
// no service-account signer, no admin identity.
func TestRenewalNotDueServesTheStoredCertificates(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	before, row := s.identityRows(t), s.clusterRow(t, clusterID)

	clk.Set(39 * time.Minute) // 21 minutes left, the window is 20
	got := s.mustRenew(t, vm, b)
	if len(got.Renewed) != 0 {
		t.Fatalf("renewed %v with 21 minutes left", got.Renewed)
	}
	if len(got.Certificates) != len(pki.Renewable()) {
		t.Errorf("answered %d certificates, want the %d renewable ones", len(got.Certificates), len(pki.Renewable()))
	}
	for _, name := range pki.Renewable() {
		if got.Certificates[string(name)] != b.Files[bundle.CertPath(name)] {
			t.Errorf("%s is not the one the bundle carried", name)
		}
	}
	if _, ok := got.Certificates[string(pki.Admin)]; ok {
		t.Error("a renewal answered the admin identity")
	}
	if !slices.EqualFunc(before, s.identityRows(t), sameRow) || s.clusterRow(t, clusterID) != row {
		t.Error("a renewal with nothing due wrote to the database")
	}
}

// Due: every renewable certificate of the node is re-issued over the key
// the node holds, and nothing else changes: not the keys, not the peers'
// rows, not the cluster's row. The new certificates chain to the same CAs.
func TestRenewalDueReissuesOverTheHeldKeys(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	before, row := s.identityRows(t), s.clusterRow(t, clusterID)
	expiryBefore := s.expiryOf(t, clusterID)
	if expiryBefore.CertificatesExpireAt == nil || !expiryBefore.CertificatesExpireAt.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("certificates_expire_at %v, want founding + 1h (%v)", expiryBefore.CertificatesExpireAt, clk.Now().Add(time.Hour))
	}

	clk.Set(41 * time.Minute) // 19 minutes left
	got := s.mustRenew(t, vm, b)
	if len(got.Renewed) != len(pki.Renewable()) {
		t.Fatalf("renewed %v, want every renewable identity", got.Renewed)
	}
	after := s.identityRows(t)
	for i := range before {
		was, is := before[i], after[i]
		switch {
		case was.VMID != vm.id || was.Name == string(pki.Admin):
			if !sameRow(is, was) {
				t.Errorf("vm %d %s changed", was.VMID, was.Name)
			}
		case is.Cert == was.Cert || string(is.Key) != string(was.Key) || !is.NotAfter.Equal(clk.Now().Add(time.Hour)):
			t.Errorf("%s of the renewed node: want a new certificate and expiry over the same sealed key", was.Name)
		case got.Certificates[was.Name] != is.Cert:
			t.Errorf("%s served is not %s stored", was.Name, was.Name)
		}
	}
	if s.clusterRow(t, clusterID) != row {
		t.Error("the cluster's row (its CAs) changed")
	}
	for _, name := range []pki.Name{pki.APIServer, pki.KubeletClient} {
		verifyChain(t, b.Files["/etc/exk8s/pki/ca.pem"], got.Certificates[string(name)])
		verifyKeyPair(t, got.Certificates[string(name)], b.Files[bundle.KeyPath(name)])
	}
	verifyChain(t, b.Files["/etc/exk8s/pki/etcd-ca.pem"], got.Certificates[string(pki.EtcdPeer)])
	// Renewed again right away: not due any more, the renewed ones come back.
	if again := s.mustRenew(t, vm, b); len(again.Renewed) != 0 || again.Certificates["apiserver"] != got.Certificates["apiserver"] {
		t.Errorf("a second renewal re-issued %v", again.Renewed)
	}
}

// When every node renewed, the cluster's expiry moves; the admin identity,
// bootstrap-only, never counts in it.
func TestRenewalMovesTheClusterExpiry(t *testing.T) {
	s, clk := renewingStack(t)
	res := s.Found(1, `{"control_plane_count":1,"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	var b bundleBody
	s.FetchBundle(vm.id, vm.imds, vm.access).JSON(t, &b)
	s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	before := s.expiryOf(t, res.ClusterID)
	clk.Set(50 * time.Minute)
	s.mustRenew(t, vm, b)
	after := s.expiryOf(t, res.ClusterID)
	if want := before.CertificatesExpireAt.Add(50 * time.Minute); !after.CertificatesExpireAt.Equal(want) {
		t.Errorf("certificates_expire_at %v, want %v", after.CertificatesExpireAt, want)
	}
	if !after.CAsExpireAt["ca"].Equal(before.CAsExpireAt["ca"]) {
		t.Error("a renewal moved the CA's expiry")
	}
}

// Only a node that finished its bootstrap renews: before ready, and after
// a failed that came before any ready, 409 and nothing written.
func TestRenewalRefusedBeforeReady(t *testing.T) {
	s, clk := renewingStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	var b bundleBody
	s.FetchBundle(vm.id, vm.imds, vm.access).JSON(t, &b)
	clk.Set(59 * time.Minute)
	before := s.identityRows(t)
	for _, phase := range []string{"", `{"phase":"apiserver_ready"}`, `{"phase":"failed","message":"x"}`} {
		if phase != "" {
			s.mustReport(vm, phase, http.StatusNoContent)
		}
		r := s.renew(t, vm, b)
		if r.Status != http.StatusConflict || r.ErrorCode(t) != "node_not_ready" {
			t.Errorf("after %q: %d %s", phase, r.Status, r.Body)
		}
	}
	if !slices.EqualFunc(before, s.identityRows(t), sameRow) {
		t.Error("a refused renewal wrote")
	}
}

// The VM's proofs alone renew nothing: without the keys (no requests,
// requests signed with another key, a request of the wrong identity's key)
// the renewal is refused, recorded, and writes nothing.
func TestRenewalRequiresProofOfPossession(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	clk.Set(45 * time.Minute)
	before := s.identityRows(t)
	stranger := mustKeyPEM(t)
	swapped := maps.Clone(b.Files)
	swapped[bundle.KeyPath(pki.APIServer)] = b.Files[bundle.KeyPath(pki.EtcdPeer)]
	strange := maps.Clone(b.Files)
	strange[bundle.KeyPath(pki.KubeletClient)] = stranger
	cases := []struct {
		name, body, code string
		status           int
	}{
		{"no body", "", "invalid_json", 400},
		{"no requests", `{"csrs":{}}`, "invalid_request", 400},
		{"not a request", `{"csrs":{"apiserver":"hello"}}`, "invalid_request", 400},
		{"the admin identity", adminRequest(t, b), "invalid_request", 400},
		{"another identity's key", stacktest.RenewalRequest(t, swapped), "proof_of_possession_failed", 403},
		{"a key of its own making", stacktest.RenewalRequest(t, strange), "proof_of_possession_failed", 403},
	}
	for _, c := range cases {
		r := s.Renew(vm.id, vm.imds, vm.access, c.body)
		if r.Status != c.status || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	if !slices.EqualFunc(before, s.identityRows(t), sameRow) {
		t.Error("a refused renewal wrote")
	}
	refused := 0
	for _, f := range s.nodeOf(clusterID, vm.id).Fetches {
		if f.Outcome == "renewal_refused" {
			refused++
		}
	}
	if refused != len(cases)-1 { // all but the one with no JSON body reached the node
		t.Errorf("%d renewals recorded as refused, want %d", refused, len(cases)-1)
	}
}

// One VM renewing in a loop meets its budget: 429 with Retry-After, and
// every answered renewal is recorded.
func TestRenewalIsLimitedPerVM(t *testing.T) {
	s, _ := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	body := stacktest.RenewalRequest(t, b.Files)
	statuses := map[int]int{}
	var last stacktest.Response
	for range 15 {
		last = s.Renew(vm.id, vm.imds, vm.access, body)
		statuses[last.Status]++
	}
	if statuses[http.StatusOK] != 12 || statuses[http.StatusTooManyRequests] != 3 {
		t.Fatalf("statuses %v, want 12 answered and 3 refused", statuses)
	}
	if last.ErrorCode(t) != "rate_limited" || last.Header.Get("Retry-After") == "" {
		t.Errorf("the refusal: %s, Retry-After %q", last.Body, last.Header.Get("Retry-After"))
	}
	renewed := 0
	for _, f := range s.nodeOf(clusterID, vm.id).Fetches {
		if f.Outcome == "renewed" {
			renewed++
		}
	}
	if renewed != 12 {
		t.Errorf("%d renewals recorded, want 12", renewed)
	}
}

// Two renewals of one due node at once: one stores, the other stores
// nothing (renewal_conflict) or finds the first one's (not due); the node
// never holds a mix of both.
func TestConcurrentRenewalsNeverMix(t *testing.T) {
	s, clk := renewingStack(t)
	_, vm, b := s.readyNodeWithBundle(t)
	clk.Set(45 * time.Minute)
	body := stacktest.RenewalRequest(t, b.Files)
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = s.Renew(vm.id, vm.imds, vm.access, body).Status
		}()
	}
	wg.Wait()
	for _, st := range statuses {
		if st != http.StatusOK && st != http.StatusConflict {
			t.Errorf("statuses %v", statuses)
		}
	}
	served := s.mustRenew(t, vm, b) // whatever is stored now, whole
	for _, r := range s.identityRows(t) {
		if r.VMID == vm.id && r.Name != string(pki.Admin) && served.Certificates[r.Name] != r.Cert {
			t.Errorf("%s stored is not what a renewal serves", r.Name)
		}
	}
}

// adminRequest is a renewal that also asks for the admin identity.
func adminRequest(t *testing.T, b bundleBody) string {
	var req map[string]map[string]string
	if err := json.Unmarshal([]byte(stacktest.RenewalRequest(t, b.Files)), &req); err != nil {
		t.Fatal(err)
	}
	req["csrs"][string(pki.Admin)] = stacktest.SignedCSR(t, b.Files[bundle.KeyPath(pki.Admin)])
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func mustKeyPEM(t *testing.T) string {
	key, err := pki.GenerateKey(pki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pki.EncodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

func sameRow(a, b identityRow) bool {
	return a.VMID == b.VMID && a.Name == b.Name && a.Cert == b.Cert && string(a.Key) == string(b.Key) && a.NotAfter.Equal(b.NotAfter)
}

func verifyChain(t *testing.T, caPEM, leafPEM string) {
	t.Helper()
	ca, err := pki.ParseCert([]byte(caPEM))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.ParseCert([]byte(leafPEM))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: leaf.NotBefore.Add(time.Minute),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s does not chain to %s: %v", leaf.Subject.CommonName, ca.Subject.CommonName, err)
	}
}

// verifyKeyPair checks the served certificate is over the node's key.
func verifyKeyPair(t *testing.T, certPEM, keyPEM string) {
	t.Helper()
	if _, err := pki.LoadCA([]byte(certPEM), []byte(keyPEM)); err != nil {
		t.Errorf("key and certificate do not match: %v", err)
	}
}

// A node bootstrapped before the cert table gained an identity (here the
// control-plane taint's) holds no such certificate and its renewal script
// names none: it renews the rest, and is answered nothing of the new one.
func TestRenewalOfANodeOlderThanAnIdentity(t *testing.T) {
	s, _ := renewingStack(t)
	_, vm, b := s.readyNodeWithBundle(t)
	if _, err := s.pool.Exec(context.Background(), `DELETE FROM node_identities WHERE name = $1`, string(pki.ControlPlaneTaint)); err != nil {
		t.Fatal(err)
	}
	delete(b.Files, bundle.KeyPath(pki.ControlPlaneTaint))
	csrs := map[pki.Name]string{}
	for _, name := range pki.Renewable() {
		if name != pki.ControlPlaneTaint {
			csrs[name] = stacktest.SignedCSR(t, b.Files[bundle.KeyPath(name)])
		}
	}
	body, _ := json.Marshal(map[string]any{"csrs": csrs})
	r := s.Renew(vm.id, vm.imds, vm.access, string(body))
	var got renewalBody
	r.JSON(t, &got)
	if r.Status != http.StatusOK || len(got.Certificates) != len(pki.Renewable())-1 || got.Certificates[string(pki.ControlPlaneTaint)] != "" {
		t.Fatalf("renewal without the new identity: %d, %d certificates %s", r.Status, len(got.Certificates), r.Body)
	}
	// Asked for while k8sapi holds none: identity_not_stored, as before.
	csrs[pki.ControlPlaneTaint] = csrs[pki.Scheduler]
	body, _ = json.Marshal(map[string]any{"csrs": csrs})
	if r := s.Renew(vm.id, vm.imds, vm.access, string(body)); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "identity_not_stored") {
		t.Errorf("a request for an identity k8sapi holds none of: %d %s", r.Status, r.Body)
	}
}
