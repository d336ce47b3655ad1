package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TestCA is a throwaway ECDSA CA for harness smoke tests (the real proof
// uses the bundle's own PKI).
type TestCA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewTestCA makes a self-signed CA.
func NewTestCA(cn string) (*TestCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &TestCA{Cert: cert, Key: key}, nil
}

// WriteCert writes the CA to dir/name.pem.
func (ca *TestCA) WriteCert(dir, name string) error {
	return writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", ca.Cert.Raw, 0o644)
}

// Issue signs a leaf for cn with the given IP SANs, usable for both server
// and client auth, and writes dir/name.pem and dir/name-key.pem.
func (ca *TestCA) Issue(dir, name, cn string, ips ...string) error {
	certPEM, keyPEM, err := ca.IssuePEM(cn, ips...)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, name+".pem"), certPEM, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600)
}

// IssuePEM signs a leaf for cn (and localhost) with the given IP SANs,
// usable for both server and client auth: the certificate and its key, PEM.
func (ca *TestCA) IssuePEM(cn string, ips ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := leafTemplate(cn, ips)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func leafTemplate(cn string, ips []string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{cn, "localhost"},
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("bad IP SAN %q", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	return tmpl, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return writeFile(path, pemBlock(typ, der), mode)
}

func writeFile(path string, content []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, content, mode)
}
