package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// signerOf makes a key of the named kind.
func signerOf(t *testing.T, kind string) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch kind {
	case "P-224", "P-256", "P-384", "P-521":
		curves := map[string]elliptic.Curve{"P-224": elliptic.P224(), "P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
		k, err = ecdsa.GenerateKey(curves[kind], rand.Reader)
	case "Ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	case "RSA-1024", "RSA-2047", "RSA-2048", "RSA-3072":
		bits := map[string]int{"RSA-1024": 1024, "RSA-2047": 2047, "RSA-2048": 2048, "RSA-3072": 3072}
		k, err = rsa.GenerateKey(rand.Reader, bits[kind])
	}
	if err != nil || k == nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return k
}

func csrOver(t *testing.T, k crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:w-1"}}, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// Every certificate request is held to one key policy: ECDSA P-256 or
// P-384, Ed25519, or RSA of at least 2048 bits; a request over any other
// key (an RSA-1024 one was signed for a worker: issue 43) is refused by
// ParseCSR, which workers' requests and every renewal go through, with
// the key named.
func TestKeyPolicy(t *testing.T) {
	for kind, accepted := range map[string]bool{
		"P-256": true, "P-384": true, "Ed25519": true, "RSA-2048": true, "RSA-3072": true,
		"P-224": false, "P-521": false, "RSA-1024": false, "RSA-2047": false,
	} {
		k := signerOf(t, kind)
		_, err := ParseCSR(csrOver(t, k))
		if accepted != (err == nil) {
			t.Errorf("%s: ParseCSR = %v, want accepted %v", kind, err, accepted)
		}
		if !accepted && (!errors.Is(err, ErrKeyPolicy) || !strings.Contains(err.Error(), "RSA of at least 2048 bits")) {
			t.Errorf("%s: refused with %v, want ErrKeyPolicy naming the policy", kind, err)
		}
		if check := CheckKeyPolicy(k.Public()); (check == nil) != accepted {
			t.Errorf("%s: CheckKeyPolicy = %v", kind, check)
		}
	}
	if err := CheckKeyPolicy(&rsa.PublicKey{}); err == nil || strings.Contains(err.Error(), "panic") {
		t.Errorf("an empty RSA key: %v", err)
	}
}

// A renewal's proof of possession holds the request to the same policy,
// even over the very key of the certificate it renews.
func TestProvePossessionHoldsTheKeyPolicy(t *testing.T) {
	k := signerOf(t, "RSA-1024")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "w-1"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := ProvePossession(csrOver(t, k), cert); !errors.Is(err, ErrKeyPolicy) {
		t.Fatalf("renewal over an RSA-1024 key: %v, want ErrKeyPolicy", err)
	}
}
