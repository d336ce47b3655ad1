package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// LeafSchedule is when a stored leaf is re-issued: once less than RenewBefore of
// its life is left. Lifetime is how long a leaf issued now lives.
type LeafSchedule struct {
	Lifetime    time.Duration
	RenewBefore time.Duration
}

// DefaultLeafSchedule is a year's leaves renewed in their last third.
func DefaultLeafSchedule() LeafSchedule {
	return LeafSchedule{Lifetime: DefaultLeafLifetime, RenewBefore: DefaultLeafLifetime / 3}
}

// Due says whether a leaf with certificate certPEM must be re-issued at now.
func (r LeafSchedule) Due(certPEM []byte, now time.Time) (bool, error) {
	notAfter, err := NotAfter(certPEM)
	if err != nil {
		return false, err
	}
	return notAfter.Sub(now) < r.RenewBefore, nil
}

// NotAfter is the end of the validity of the certificate in certPEM.
func NotAfter(certPEM []byte) (time.Time, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading a certificate's expiry: %w", err)
	}
	return cert.NotAfter, nil
}

// ErrNotPossessed is a renewal request whose key is not the certificate's.
var ErrNotPossessed = errors.New("the request is not signed with the certificate's key")

// ProvePossession checks that csrPEM is a certificate request signed by the
// private key of certPEM's certificate: the holder of the key asks, not
// merely someone who can call the route. Its subject and names are ignored;
// a renewal re-issues what the cert table says. ErrNotPossessed when the key
// differs; any other error is a malformed request.
func ProvePossession(csrPEM, certPEM []byte) (crypto.PublicKey, error) {
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("the stored certificate: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, csr.PublicKey) {
		return nil, ErrNotPossessed
	}
	return csr.PublicKey, nil
}

// ParseCSR reads one PEM certificate request and checks its signature and
// its key (CheckKeyPolicy): every request k8sapi signs is read here.
func ParseCSR(p []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("not one PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	if err := CheckKeyPolicy(csr.PublicKey); err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	return csr, nil
}

// Reissue makes a new certificate of the named leaf for n over a key its
// holder already has (pub: a node's renewal, an operator's request): the
// names are the cert table's and n's, whatever the request asked for, and
// no key is made.
func (is Issuer) Reissue(t *Trust, name Name, n Subject, pub crypto.PublicKey) ([]byte, error) {
	spec, ca, err := is.leaf(t, name)
	if err != nil {
		return nil, err
	}
	_, der, err := is.sign(spec, n, pub, ca.Cert, ca.Key)
	if err != nil {
		return nil, err
	}
	return EncodeCert(der), nil
}
