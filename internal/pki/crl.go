package pki

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// The etcd CRL (issue 43, item 2; docs/REPLACE-NODE.md): a retired node's
// etcd-CA certificates are listed by serial on a CRL signed by the etcd CA,
// which every member's etcd reads at each handshake. etcd compares serials
// only (it checks neither the CRL's signature nor its dates), so the node
// checks the signature before it installs one (exk8s-etcd-crl.sh).

// Revoked is one certificate on a CRL: its serial (lower-case hex, as
// SerialHex spells it) and when it was revoked.
type Revoked struct {
	Serial    string
	RevokedAt time.Time
}

// crlLifetime is the CRL's nextUpdate: the etcd CA's own lifetime, since
// nothing re-signs a CRL on a schedule (a new one is signed only when a node
// is retired) and etcd reads no dates.
const crlLifetime = caLifetime

// EtcdCALeaves are the cert table's leaves the etcd CA signs: the ones a
// retired node's CRL lists.
func EtcdCALeaves() []Name {
	var out []Name
	for _, s := range CertList() {
		if s.Signer == EtcdCA {
			out = append(out, s.Name)
		}
	}
	return out
}

// SignCRL signs the CRL of number listing revoked with ca (the etcd CA),
// PEM-encoded.
func SignCRL(ca *CA, number int64, revoked []Revoked, now time.Time) ([]byte, error) {
	entries := make([]x509.RevocationListEntry, 0, len(revoked))
	for _, r := range revoked {
		serial, ok := new(big.Int).SetString(r.Serial, 16)
		if !ok {
			return nil, fmt.Errorf("signing the CRL: serial %q is not hex", r.Serial)
		}
		entries = append(entries, x509.RevocationListEntry{SerialNumber: serial, RevocationTime: r.RevokedAt.UTC()})
	}
	tmpl := &x509.RevocationList{
		Number: big.NewInt(number), ThisUpdate: now.Add(-backdate).UTC(), NextUpdate: now.Add(crlLifetime).UTC(),
		RevokedCertificateEntries: entries,
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing the CRL: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}

// ParseCRL reads one PEM CRL and checks it is signed by ca.
func ParseCRL(p []byte, ca *x509.Certificate) (*x509.RevocationList, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "X509 CRL" {
		return nil, errors.New("not a PEM CRL")
	}
	crl, err := x509.ParseRevocationList(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CRL: %w", err)
	}
	if err := crl.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("CRL signature: %w", err)
	}
	return crl, nil
}

// SerialHex is the serial of the certificate in certPEM and its end, as a
// CRL lists it.
func SerialHex(certPEM []byte) (string, time.Time, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return "", time.Time{}, err
	}
	return cert.SerialNumber.Text(16), cert.NotAfter, nil
}
