package nodebootstrap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/pki"
)

// A worker's renewal names both its identities, in both maps, and nothing
// else; every problem is said at once.
func TestCheckWorkerRenewal(t *testing.T) {
	both := map[string]string{"kubelet-client": "x", "kubelet": "y"}
	if err := checkWorkerRenewal(WorkerRenewalRequest{CSRs: both, Certificates: both}); err != nil {
		t.Fatalf("a whole renewal: %v", err)
	}
	err := checkWorkerRenewal(WorkerRenewalRequest{CSRs: map[string]string{"kubelet": "y", "etcd-peer": "z"},
		Certificates: map[string]string{"kubelet-client": strings.Repeat("x", MaxCSRBytes+1), "kubelet": "y"}})
	want := "certificates.kubelet-client: is over 8 KiB; csrs.etcd-peer: is no identity a worker renews; csrs.kubelet-client: is required"
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.InvalidRequest || e.Message != want {
		t.Errorf("a bad renewal: %v, want invalid_request %q", err, want)
	}
}

// A certificate is the worker's only if its cluster CA signed it for the
// worker's row: the node's common name and the row's usages.
func TestOwnCertificate(t *testing.T) {
	is := pki.Issuer{Algorithm: pki.ECDSAP256, Now: time.Now}
	trust, other := mustTrust(t, is), mustTrust(t, is)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	self := pki.Subject{Name: "workers-1.cluster-1.internal", IPv4: "10.0.0.21"}
	issue := func(tr *pki.Trust, name pki.Name, who pki.Subject) string {
		cert, err := is.Reissue(tr, name, who, &key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		return string(cert)
	}
	ca := trust.CAs[pki.ClusterCA].Cert
	if err := ownCertificate(issue(trust, pki.KubeletClient, self), pki.KubeletClient, self, []*x509.Certificate{ca}); err != nil {
		t.Errorf("its own client certificate: %v", err)
	}
	for what, cert := range map[string]string{
		"another CA's":                     issue(other, pki.KubeletClient, self),
		"another node's":                   issue(trust, pki.KubeletClient, pki.Subject{Name: "workers-2.cluster-1.internal", IPv4: "10.0.0.22"}),
		"its serving, shown as its client": issue(trust, pki.KubeletServing, self),
	} {
		var e *apperr.Error
		if err := ownCertificate(cert, pki.KubeletClient, self, []*x509.Certificate{ca}); !errors.As(err, &e) || e.Code != apperr.ProofOfPossessionFailed {
			t.Errorf("%s certificate: %v, want proof_of_possession_failed", what, err)
		}
	}
	var e *apperr.Error
	if err := ownCertificate("not PEM", pki.KubeletClient, self, []*x509.Certificate{ca}); !errors.As(err, &e) || e.Code != apperr.InvalidRequest {
		t.Errorf("not a certificate: %v, want invalid_request", err)
	}
}

func mustTrust(t *testing.T, is pki.Issuer) *pki.Trust {
	t.Helper()
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	return trust
}
