package integration

import (
	"context"
	"crypto/x509"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

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
func hourLeaves() pki.Renewal              { return pki.Renewal{Lifetime: time.Hour, RenewBefore: 20 * time.Minute} }
func renewingStack(t *testing.T) (*stack, *fixedClock) {
	c := newClock(time.Now().Truncate(time.Second))
	s := newStack(t, func(cfg *stacktest.Config) { cfg.Now, cfg.Renewal = c.Now, hourLeaves() })
	return s, c
}

type renewalBody struct {
	bundleBody
	Renewed []string `json:"renewed"`
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

// readyNode founds three nodes and reports the first ready.
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

func (s *stack) mustRenew(t *testing.T, vm vmProof) renewalBody {
	t.Helper()
	r := s.Renew(vm.id, vm.imds, vm.access)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("renew vm %d: %d %s", vm.id, r.Status, r.Body)
	}
	var b renewalBody
	r.JSON(t, &b)
	return b
}

// Not due: the stored identities come back byte for byte, nothing stored
// changes, the clients are fresh, and only credentials are served.
func TestRenewalNotDueServesTheStoredIdentities(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm, b := s.readyNodeWithBundle(t)
	before, row := s.identityRows(t), s.clusterRow(t, clusterID)

	clk.Set(39 * time.Minute) // 21 minutes left, the window is 20
	got := s.mustRenew(t, vm)
	if len(got.Renewed) != 0 {
		t.Fatalf("renewed %v with 21 minutes left", got.Renewed)
	}
	for _, f := range []string{"/etc/exk8s/pki/apiserver.pem", "/etc/exk8s/pki/apiserver-key.pem", "/etc/exk8s/pki/etcd-peer.pem", "/etc/exk8s/pki/etcd-peer-key.pem"} {
		if got.Files[f] != b.Files[f] {
			t.Errorf("%s is not the stored one", f)
		}
	}
	if got.Files["/etc/exk8s/pki/apiserver-etcd-client.pem"] == b.Files["/etc/exk8s/pki/apiserver-etcd-client.pem"] {
		t.Error("the client identity was not fresh")
	}
	for f := range got.Files {
		if !slices.Contains([]string{"/etc/exk8s/pki", "/etc/exk8s/kubeconfig"}, dirOf(f)) {
			t.Errorf("a renewal served %s", f)
		}
	}
	if len(got.Files) != len(got.FileModes) || got.FileModes["/etc/exk8s/kubeconfig/admin.kubeconfig"] != "0600" {
		t.Errorf("modes %v", got.FileModes)
	}
	if !slices.EqualFunc(before, s.identityRows(t), sameRow) || s.clusterRow(t, clusterID) != row {
		t.Error("a renewal with nothing due wrote to the database")
	}
}

// Due: the node's sealed columns are replaced, and nothing else: not its
// other rows' neighbours, not the peers' rows, not the cluster's row. The
// new certificate chains to the same CA, and the cluster's expiry moves.
func TestRenewalDueReplacesTheSealedColumns(t *testing.T) {
	s, clk := renewingStack(t)
	clusterID, vm := s.readyNode(t)
	before, row := s.identityRows(t), s.clusterRow(t, clusterID)
	expiryBefore := s.expiryOf(t, clusterID)
	if expiryBefore.CertificatesExpireAt == nil || !expiryBefore.CertificatesExpireAt.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("certificates_expire_at %v, want founding + 1h (%v)", expiryBefore.CertificatesExpireAt, clk.Now().Add(time.Hour))
	}
	if len(expiryBefore.CAsExpireAt) != 3 || !expiryBefore.CAsExpireAt["ca"].After(clk.Now().Add(9*365*24*time.Hour)) {
		t.Fatalf("cas_expire_at %v", expiryBefore.CAsExpireAt)
	}

	clk.Set(41 * time.Minute) // 19 minutes left
	got := s.mustRenew(t, vm)
	if !slices.Equal(got.Renewed, []string{"etcd-peer", "apiserver"}) {
		t.Fatalf("renewed %v", got.Renewed)
	}
	after := s.identityRows(t)
	for i := range before {
		b, a := before[i], after[i]
		if b.VMID != vm.id {
			if !sameRow(a, b) {
				t.Errorf("vm %d %s changed: a renewal touched a peer", b.VMID, b.Name)
			}
			continue
		}
		if a.Cert == b.Cert || string(a.Key) == string(b.Key) || !a.NotAfter.Equal(clk.Now().Add(time.Hour)) {
			t.Errorf("%s of the renewed node: cert, key and not_after not all replaced", b.Name)
		}
		if got.Files["/etc/exk8s/pki/"+b.Name+".pem"] != a.Cert {
			t.Errorf("%s served is not %s stored", b.Name, b.Name)
		}
	}
	if s.clusterRow(t, clusterID) != row {
		t.Error("the cluster's row (its CAs) changed")
	}
	caPEM := got.Files["/etc/exk8s/pki/ca.pem"]
	verifyChain(t, caPEM, got.Files["/etc/exk8s/pki/apiserver.pem"])
	verifyChain(t, got.Files["/etc/exk8s/pki/etcd-ca.pem"], got.Files["/etc/exk8s/pki/etcd-peer.pem"])
	// The peers keep founding's identities: the earliest expiry is theirs.
	if e := s.expiryOf(t, clusterID); !e.CertificatesExpireAt.Equal(*expiryBefore.CertificatesExpireAt) {
		t.Errorf("certificates_expire_at moved to %v while peers hold the founding's", e.CertificatesExpireAt)
	}
	// Renewed again right away: not due any more, the renewed ones come back.
	if again := s.mustRenew(t, vm); len(again.Renewed) != 0 || again.Files["/etc/exk8s/pki/apiserver.pem"] != got.Files["/etc/exk8s/pki/apiserver.pem"] {
		t.Errorf("a second renewal re-issued %v", again.Renewed)
	}
}

// When every node renewed, the cluster's expiry moves.
func TestRenewalMovesTheClusterExpiry(t *testing.T) {
	s, clk := renewingStack(t)
	res := s.Found(1, `{"control_plane_count":1,"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	s.mustReport(vm, `{"phase":"ready"}`, http.StatusNoContent)
	before := s.expiryOf(t, res.ClusterID)
	clk.Set(50 * time.Minute)
	s.mustRenew(t, vm)
	after := s.expiryOf(t, res.ClusterID)
	if want := before.CertificatesExpireAt.Add(50 * time.Minute); !after.CertificatesExpireAt.Equal(want) {
		t.Errorf("certificates_expire_at %v, want %v", after.CertificatesExpireAt, want)
	}
	if !after.CAsExpireAt["ca"].Equal(before.CAsExpireAt["ca"]) {
		t.Error("a renewal moved the CA's expiry")
	}
}

// Only a ready node renews: before ready, and after failed, 409 and
// nothing written.
func TestRenewalRefusedBeforeReady(t *testing.T) {
	s, clk := renewingStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	vm := s.proof(res.ControlPlaneVMIDs[0])
	clk.Set(59 * time.Minute)
	before := s.identityRows(t)
	for _, phase := range []string{"", `{"phase":"apiserver_ready"}`, `{"phase":"failed","message":"x"}`} {
		if phase != "" {
			s.mustReport(vm, phase, http.StatusNoContent)
		}
		r := s.Renew(vm.id, vm.imds, vm.access)
		if r.Status != http.StatusConflict || r.ErrorCode(t) != "node_not_ready" {
			t.Errorf("after %q: %d %s", phase, r.Status, r.Body)
		}
	}
	if !slices.EqualFunc(before, s.identityRows(t), sameRow) {
		t.Error("a refused renewal wrote")
	}
}

// Two renewals of one due node at once: one stores, the other stores
// nothing (renewal_conflict) or finds the first one's (not due); the node
// never holds a mix of both.
func TestConcurrentRenewalsNeverMix(t *testing.T) {
	s, clk := renewingStack(t)
	_, vm := s.readyNode(t)
	clk.Set(45 * time.Minute)
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = s.Renew(vm.id, vm.imds, vm.access).Status
		}()
	}
	wg.Wait()
	for _, st := range statuses {
		if st != http.StatusOK && st != http.StatusConflict {
			t.Errorf("statuses %v", statuses)
		}
	}
	served := s.mustRenew(t, vm) // whatever is stored now, whole
	for _, r := range s.identityRows(t) {
		if r.VMID == vm.id && served.Files["/etc/exk8s/pki/"+r.Name+".pem"] != r.Cert {
			t.Errorf("%s stored is not what a renewal serves", r.Name)
		}
	}
	verifyKeyPair(t, served, "apiserver")
	verifyKeyPair(t, served, "etcd-peer")
}

func sameRow(a, b identityRow) bool {
	return a.VMID == b.VMID && a.Name == b.Name && a.Cert == b.Cert && string(a.Key) == string(b.Key) && a.NotAfter.Equal(b.NotAfter)
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
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

// verifyKeyPair checks the served key is the served certificate's.
func verifyKeyPair(t *testing.T, b renewalBody, name string) {
	t.Helper()
	if _, err := pki.LoadCA([]byte(b.Files["/etc/exk8s/pki/"+name+".pem"]), []byte(b.Files["/etc/exk8s/pki/"+name+"-key.pem"])); err != nil {
		t.Errorf("%s: key and certificate do not match: %v", name, err)
	}
}
