package pki

import (
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
		}
	}
	for _, bad := range []string{"", "not pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"} {
		if _, err := ExpiresAt([]byte(bad)); err == nil {
			t.Errorf("ExpiresAt(%q) took it", bad)
		}
	}
}
