package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// ExpiresAt reads the same end of validity as a full parse, for a CA and a
// leaf of either algorithm, and refuses what is not a certificate.
func TestExpiresAtAgreesWithAFullParse(t *testing.T) {
	for _, alg := range []Algorithm{ECDSAP256, RSA2048} {
		is := Issuer{Algorithm: alg, Now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }}
		trust, err := is.NewTrust()
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := is.Issue(trust, APIServer, Subject{Name: "cp-1.cluster-1.internal", ControlPlaneDNSName: "c1.k8s.example", ClusterDomain: "cluster.local", IPv4: "10.0.0.5", ServiceIP: net.ParseIP("10.96.0.1")})
		if err != nil {
			t.Fatal(err)
		}
		for _, certPEM := range [][]byte{trust.CAs[ClusterCA].CertPEM, leaf.CertPEM} {
			want, err := NotAfter(certPEM)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ExpiresAt(certPEM); err != nil || !got.Equal(want) {
				t.Errorf("%s: ExpiresAt = %v, %v; want %v", alg, got, err, want)
			}
			if got, ok := quickExpiry(certPEM); !ok || !got.Equal(want) {
				t.Errorf("%s: k8sapi's own certificate not read the quick way: %v, %v; want %v", alg, got, ok, want)
			}
		}
	}
	for _, bad := range []string{"", "not pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"} {
		if _, err := ExpiresAt([]byte(bad)); err == nil {
			t.Errorf("ExpiresAt(%q) took it", bad)
		}
	}
}

// The quick way reads both of RFC 5280's time forms as a full parse does:
// UTCTime through 2049 (either side of its century's turn) and
// GeneralizedTime from 2050.
func TestQuickExpiryReadsBothTimeForms(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []time.Time{
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2049, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2050, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: end}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if got, ok := quickExpiry(certPEM); !ok || !got.Equal(end) {
			t.Errorf("quickExpiry of a certificate ending %v = %v, %v", end, got, ok)
		}
		if got, err := expiresAt(certPEM); err != nil || !got.Equal(end) {
			t.Errorf("expiresAt of a certificate ending %v = %v, %v", end, got, err)
		}
	}
}
