package integration

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// workerKeys are a worker's two kubelet keys, kept, as its bootstrap
// script keeps them, for its renewals.
type workerKeys struct{ client, serving *ecdsa.PrivateKey }

func newWorkerKeys(t *testing.T) workerKeys {
	t.Helper()
	return workerKeys{client: ecKey(t), serving: ecKey(t)}
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signedCSR is a PEM request over key.
func signedCSR(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// csrs are the bootstrap's requests of w over k.
func (k workerKeys) csrs(t *testing.T, w *worker) nodebootstrap.WorkerCSRRequest {
	user := pkix.Name{CommonName: "system:node:" + w.node.Name, Organization: []string{"system:nodes"}}
	return nodebootstrap.WorkerCSRRequest{
		KubeletClient:  signedCSR(t, k.client, &x509.CertificateRequest{Subject: user}),
		KubeletServing: signedCSR(t, k.serving, &x509.CertificateRequest{Subject: user, DNSNames: []string{w.node.Name}, IPAddresses: []net.IP{net.ParseIP(w.node.IPv4)}}),
	}
}

// renewal is the renewal script's body: each certificate held, and a
// request over each key (its subject is ignored).
func (k workerKeys) renewal(t *testing.T, client, serving string) nodebootstrap.WorkerRenewalRequest {
	return nodebootstrap.WorkerRenewalRequest{
		CSRs: map[string]string{
			string(pki.KubeletClient):  signedCSR(t, k.client, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "kubelet-client"}}),
			string(pki.KubeletServing): signedCSR(t, k.serving, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "kubelet"}}),
		},
		Certificates: map[string]string{string(pki.KubeletClient): client, string(pki.KubeletServing): serving},
	}
}

// renewAs is POST /bootstrap/worker/{vmID}/renew with w's proofs.
func (w *worker) renewAs(vmID int64, req nodebootstrap.WorkerRenewalRequest) renewalResult {
	w.s.t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		w.s.t.Fatal(err)
	}
	r := w.s.VMCall(http.MethodPost, bundle.WorkerRenewPathTemplate, vmID, w.imds, w.access, string(body))
	out := renewalResult{status: r.Status}
	if r.Status == http.StatusOK {
		r.JSON(w.s.t, &out.body)
	}
	return out
}

type renewalResult struct {
	status int
	body   renewalBody
}

// A worker signs its keys, becomes Ready and renews: before its
// certificates are due it is answered them unchanged; once due, both are
// re-issued over the same keys, for its recorded names, from its cluster
// CA. A request over another key than the certificate's, a certificate of
// another node, or a worker not yet Ready is refused.
func TestWorkerRenewsItsCertificatesOverItsKeys(t *testing.T) {
	s, clock := renewingStack(t)
	w := workerOn(t, s)
	keys := newWorkerKeys(t)
	var b nodebootstrap.WorkerBundle
	w.fetchAs(w.vmID).JSON(t, &b)
	own := keys.csrs(t, w)
	r := w.signAs(w.vmID, own)
	if r.Status != http.StatusOK {
		t.Fatalf("signing = %d %s", r.Status, r.Body)
	}
	var certs nodebootstrap.WorkerCertificates
	r.JSON(t, &certs)
	held := keys.renewal(t, certs.KubeletClient, certs.KubeletServing)

	refusedRenewal(t, "a renewal before its Node is Ready", w, held, http.StatusConflict, "node_not_ready")
	for _, phase := range []string{`{"phase":"kubelet_started"}`, `{"phase":"ready"}`} {
		if r := w.reportAs(w.vmID, phase); r.Status != http.StatusNoContent {
			t.Fatalf("report %s = %d %s", phase, r.Status, r.Body)
		}
	}

	early := w.renewAs(w.vmID, held)
	if early.status != http.StatusOK || len(early.body.Renewed) != 0 ||
		early.body.Certificates[string(pki.KubeletClient)] != certs.KubeletClient || early.body.Certificates[string(pki.KubeletServing)] != certs.KubeletServing {
		t.Fatalf("a renewal with nothing due = %d %+v, want its certificates unchanged", early.status, early.body)
	}

	clock.Set(45 * time.Minute) // 15 of the hour left: due
	wrongKey := keys.renewal(t, certs.KubeletClient, certs.KubeletServing)
	wrongKey.CSRs[string(pki.KubeletServing)] = signedCSR(t, ecKey(t), &x509.CertificateRequest{})
	refusedRenewal(t, "a request over another key", w, wrongKey, http.StatusForbidden, "proof_of_possession_failed")
	swapped := keys.renewal(t, certs.KubeletServing, certs.KubeletClient)
	refusedRenewal(t, "each certificate shown as the other", w, swapped, http.StatusForbidden, "proof_of_possession_failed")

	renewed := w.renewAs(w.vmID, held)
	if renewed.status != http.StatusOK || !slices.Equal(renewed.body.Renewed, []string{string(pki.KubeletClient), string(pki.KubeletServing)}) {
		t.Fatalf("a due renewal = %d %+v, want both renewed", renewed.status, renewed.body)
	}
	again := nodebootstrap.WorkerCertificates{KubeletClient: renewed.body.Certificates[string(pki.KubeletClient)],
		KubeletServing: renewed.body.Certificates[string(pki.KubeletServing)], CACert: b.Files[bundle.CertPath(pki.ClusterCA)]}
	if again.KubeletClient == certs.KubeletClient || again.KubeletServing == certs.KubeletServing {
		t.Fatal("a due renewal answered the certificates the worker held")
	}
	assertWorkerCertsAt(t, clock.Now(), again, own, w.node.Name, w.node.IPv4)
	if end, err := pki.NotAfter([]byte(again.KubeletClient)); err != nil || !end.After(clock.Now().Add(50*time.Minute)) {
		t.Errorf("the renewed client certificate ends %v (%v), want an hour from now", end, err)
	}
}

// Another worker's certificates, over keys the caller holds, renew
// nothing: k8sapi takes a certificate as the worker's only for its own
// recorded name.
func TestWorkerRenewalRefusesAnotherWorkersCertificate(t *testing.T) {
	s, _ := renewingStack(t)
	w := workerOn(t, s)
	other := &worker{s: s, node: s.AddPool(1, w.clusterID, strings.Replace(stacktest.TwoWorkers, `"workers"`, `"others"`, 1)).Nodes[0]}
	other.vmID = other.node.VMID
	other.imds, other.access = s.VMCredentials(other.vmID)
	keys := newWorkerKeys(t)
	var certs nodebootstrap.WorkerCertificates
	other.fetchAs(other.vmID)
	other.signAs(other.vmID, keys.csrs(t, other)).JSON(t, &certs)
	w.fetchAs(w.vmID)
	w.signAs(w.vmID, newWorkerKeys(t).csrs(t, w))
	for _, phase := range []string{`{"phase":"kubelet_started"}`, `{"phase":"ready"}`} {
		w.reportAs(w.vmID, phase)
	}
	refusedRenewal(t, "another worker's certificates", w, keys.renewal(t, certs.KubeletClient, certs.KubeletServing),
		http.StatusForbidden, "proof_of_possession_failed")
}

func refusedRenewal(t *testing.T, what string, w *worker, req nodebootstrap.WorkerRenewalRequest, status int, code string) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	refused(t, what, w.s.VMCall(http.MethodPost, bundle.WorkerRenewPathTemplate, w.vmID, w.imds, w.access, string(body)), status, code, "")
}
