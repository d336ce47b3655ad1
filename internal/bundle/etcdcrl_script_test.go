package bundle

import (
	"crypto/x509"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// crlNode is VM 102 of the test cluster installed into a temporary root by
// the shim, its bundle rendered from a live PKI (the script verifies CRLs
// against the etcd CA, whose key the fixtures lack), with its fake VM.
func crlNode(t *testing.T) (*clusterPKI, *fakeVM, string) {
	t.Helper()
	requireTools(t, "bash", "curl", "jq", "openssl")
	c, nodes := testCluster()
	cp := issueClusterPKI(t, c, nodes, time.Now)
	r := newTestRenderer(t)
	b, err := r.Render(cp.input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(b.Response())
	if err != nil {
		t.Fatal(err)
	}
	vm := newFakeVM(t, body)
	root := filepath.Join(t.TempDir(), "root")
	if out, err := runShim(t, r, vm, root); err != nil {
		t.Fatalf("shim: %v\n%s", err, out)
	}
	return cp, vm, root
}

func runCRLScript(t *testing.T, vm *fakeVM, root, mode string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, filepath.FromSlash(EtcdCRLScript)), mode)
	cmd.Env = append(os.Environ(), vm.env(root)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installedCRL is the DER etcd reads, parsed and checked against the etcd
// CA: its number and the serials it lists.
func installedCRL(t *testing.T, cp *clusterPKI, root string) (int64, []string) {
	t.Helper()
	der, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(EtcdCRLPath)))
	if err != nil {
		t.Fatalf("no CRL for etcd: %v", err)
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatalf("etcd's CRL is no DER CRL: %v", err)
	}
	if err := crl.CheckSignatureFrom(cp.trust.CAs[pki.EtcdCA].Cert); err != nil {
		t.Fatalf("etcd's CRL is not the etcd CA's: %v", err)
	}
	var serials []string
	for _, e := range crl.RevokedCertificateEntries {
		serials = append(serials, e.SerialNumber.Text(16))
	}
	return crl.Number.Int64(), serials
}

func crlAnswer(t *testing.T, number int64, pem []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"cluster_id": 42, "number": number, "crl": string(pem)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// etcd's ExecStartPre installs the bundle's empty CRL as DER; the timer's
// fetch leaves it while k8sapi has none (204), installs a newer one, never
// an older one (a replayed CRL takes no revocation back) nor one another CA
// signed, and etcd's next start keeps the newer one it finds. A CRL file
// that does not read is replaced, since etcd would refuse every handshake.
func TestEtcdCRLScriptInstallsOnlyNewerCRLsOfTheEtcdCA(t *testing.T) {
	cp, vm, root := crlNode(t)
	if out, err := runCRLScript(t, vm, root, "install"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if n, serials := installedCRL(t, cp, root); n != 0 || len(serials) != 0 {
		t.Fatalf("the bundle's CRL installed as number %d listing %v, want 0 and none", n, serials)
	}
	if out, err := runCRLScript(t, vm, root, "fetch"); err != nil {
		t.Fatalf("fetch with nothing revoked: %v\n%s", err, out)
	}

	revoked := []string{"1f2e3d4c5b6a", new(big.Int).Lsh(big.NewInt(1), 126).Text(16)}
	vm.crl = crlAnswer(t, 3, cp.crl(revoked, 3))
	if out, err := runCRLScript(t, vm, root, "fetch"); err != nil {
		t.Fatalf("fetch: %v\n%s", err, out)
	}
	if n, serials := installedCRL(t, cp, root); n != 3 || !slices.Equal(serials, revoked) {
		t.Fatalf("installed CRL %d listing %v, want 3 listing %v", n, serials, revoked)
	}

	vm.crl = crlAnswer(t, 2, cp.crl(nil, 2))
	if out, err := runCRLScript(t, vm, root, "fetch"); err != nil {
		t.Fatalf("fetch of an older CRL: %v\n%s", err, out)
	}
	oc, _ := testCluster()
	other := issueClusterPKI(t, oc, nil, time.Now)
	vm.crl = crlAnswer(t, 9, other.crl(nil, 9))
	if out, err := runCRLScript(t, vm, root, "fetch"); err == nil {
		t.Fatalf("a CRL of another CA was accepted:\n%s", out)
	}
	if out, err := runCRLScript(t, vm, root, "install"); err != nil {
		t.Fatalf("install over a newer CRL: %v\n%s", err, out)
	}
	if n, serials := installedCRL(t, cp, root); n != 3 || !slices.Equal(serials, revoked) {
		t.Fatalf("installed CRL %d listing %v after an older one, another CA's and a restart; want 3 listing %v", n, serials, revoked)
	}

	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(EtcdCRLPath)), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCRLScript(t, vm, root, "install"); err != nil {
		t.Fatalf("install over a torn file: %v\n%s", err, out)
	}
	if n, _ := installedCRL(t, cp, root); n != 0 {
		t.Fatalf("a torn CRL file replaced by number %d, want the bundle's 0", n)
	}
}

// A rotation of the etcd CA (docs/CA-ROTATION.md): while etcd-ca.pem holds
// both generations, the CRL the new one signed (a higher number) is
// installed by the timer, and once the file holds the new root alone,
// etcd's start installs the CRL the renewal wrote, which that root
// signed; one the old root signed is refused then.
func TestEtcdCRLScriptFollowsTheEtcdCAsGenerations(t *testing.T) {
	cp, vm, root := crlNode(t)
	if out, err := runCRLScript(t, vm, root, "install"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	next, err := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}.NewRoot(pki.EtcdCA, 2)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(root, filepath.FromSlash(CertPath(pki.EtcdCA)))
	writeFile(t, caFile, string(cp.trust.CAs[pki.EtcdCA].CertPEM)+string(next.CertPEM))
	signed := func(ca *pki.CA, number int64) []byte {
		crl, err := pki.SignCRL(ca, number, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return crl
	}
	vm.crl = crlAnswer(t, 1, signed(next, 1))
	if out, err := runCRLScript(t, vm, root, "fetch"); err != nil {
		t.Fatalf("fetch of the new generation's CRL while both are trusted: %v\n%s", err, out)
	}
	writeFile(t, caFile, string(next.CertPEM))
	writeFile(t, filepath.Join(root, filepath.FromSlash(EtcdCRLBundlePath)), string(signed(next, 2)))
	if out, err := runCRLScript(t, vm, root, "install"); err != nil {
		t.Fatalf("etcd's start after the distrust: %v\n%s", err, out)
	}
	der, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(EtcdCRLPath)))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil || crl.CheckSignatureFrom(next.Cert) != nil || crl.Number.Int64() != 2 {
		t.Fatalf("installed CRL %v (%v), want number 2 of the new generation", crl, err)
	}
	vm.crl = crlAnswer(t, 3, signed(cp.trust.CAs[pki.EtcdCA], 3))
	if out, err := runCRLScript(t, vm, root, "fetch"); err == nil {
		t.Fatalf("a CRL of the distrusted generation was accepted:\n%s", out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
