package integration

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"testing"
)

// A worker's certificate requests over a key outside the key policy
// (pki.CheckKeyPolicy) are 400 and sign nothing: an RSA-1024 key got a
// certificate (issue 43), a P-521 one too. Its own requests over P-256
// keys are then still signed: the refusal spent nothing of its window.
func TestWorkerCSROverAWeakKeyIsRefused(t *testing.T) {
	w := newWorker(t)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	user := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + w.node.Name, Organization: []string{"system:nodes"}}}
	for _, c := range []struct {
		name string
		key  crypto.Signer
	}{{"RSA of 1024 bits", rsa1024}, {"ECDSA P-521", p521}} {
		req := w.ownCSRs(t)
		req.KubeletClient = signedCSR(t, c.key, user)
		refused(t, c.name, w.signAs(w.vmID, req), http.StatusBadRequest, "invalid_request",
			"kubelet_client_csr: certificate request: the key is not one k8sapi signs: it is "+c.name)
	}
	if r := w.signAs(w.vmID, w.ownCSRs(t)); r.Status != http.StatusOK {
		t.Fatalf("its own requests after the refusals: %d %s", r.Status, r.Body)
	}
}
