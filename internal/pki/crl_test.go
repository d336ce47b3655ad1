package pki

import (
	"slices"
	"testing"
	"time"
)

// The etcd CA signs the etcd-CA leaves of the cert table: the stacked
// member's serving and peer certificate and the API server's client one.
// Workers get none of them (their identities are the cluster CA's).
func TestEtcdCALeavesAreTheControlPlanes(t *testing.T) {
	got := EtcdCALeaves()
	if want := []Name{EtcdPeer, APIServerEtcdClient}; !slices.Equal(got, want) {
		t.Fatalf("etcd-CA leaves %v, want %v (migration 032's trigger names them)", got, want)
	}
}

// A CRL signed by the etcd CA parses as an X.509 CRL, verifies against
// that CA and no other, carries its number and lists exactly the serials
// given, with their revocation times; an empty one lists nothing.
func TestSignCRLListsTheSerials(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	is := Issuer{Now: func() time.Time { return now }}
	trust, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	etcdCA := trust.CAs[EtcdCA]
	leaf, err := is.Issue(trust, APIServerEtcdClient, testNode)
	if err != nil {
		t.Fatal(err)
	}
	serial, notAfter, err := SerialHex(leaf.CertPEM)
	if err != nil || !notAfter.After(now) {
		t.Fatalf("serial %q, not after %v: %v", serial, notAfter, err)
	}
	at := now.Add(-time.Minute)
	p, err := SignCRL(etcdCA, 7, []Revoked{{Serial: serial, RevokedAt: at}, {Serial: "abc123", RevokedAt: at}}, now)
	if err != nil {
		t.Fatal(err)
	}
	crl, err := ParseCRL(p, etcdCA.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if crl.Number.Int64() != 7 || !crl.NextUpdate.After(now.Add(365*24*time.Hour)) {
		t.Errorf("number %v, next update %v", crl.Number, crl.NextUpdate)
	}
	var listed []string
	for _, e := range crl.RevokedCertificateEntries {
		listed = append(listed, e.SerialNumber.Text(16))
		if !e.RevocationTime.Equal(at) {
			t.Errorf("%x revoked at %v, want %v", e.SerialNumber, e.RevocationTime, at)
		}
	}
	if !slices.Equal(listed, []string{serial, "abc123"}) {
		t.Errorf("listed %v, want %s and abc123", listed, serial)
	}
	if _, err := ParseCRL(p, trust.CAs[ClusterCA].Cert); err == nil {
		t.Error("the etcd CRL verifies against the cluster CA")
	}
	empty, err := SignCRL(etcdCA, 0, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if crl, err := ParseCRL(empty, etcdCA.Cert); err != nil || len(crl.RevokedCertificateEntries) != 0 || crl.Number.Sign() != 0 {
		t.Errorf("empty CRL %+v: %v", crl, err)
	}
	if _, err := SignCRL(etcdCA, 8, []Revoked{{Serial: "not hex"}}, now); err == nil {
		t.Error("a serial that is not hex was signed")
	}
}
