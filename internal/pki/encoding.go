package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// EncodeCert returns the PEM of a DER certificate.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// EncodeKey returns a PKCS#8 "PRIVATE KEY" PEM, which etcd, Kubernetes and Go
// all read for both RSA and ECDSA.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey returns a PKIX "PUBLIC KEY" PEM.
func EncodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParseCert reads one PEM certificate.
func ParseCert(p []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// ParseKey reads a PKCS#8 PEM private key that can sign.
func ParseKey(p []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PKCS#8 PEM private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("private key cannot sign")
	}
	return signer, nil
}

// Serial is a certificate's serial as k8sapi records it: lower-case hex.
func Serial(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }

// PEMSerial is the Serial of a PEM certificate, "" if it is none.
func PEMSerial(p []byte) string {
	cert, err := ParseCert(p)
	if err != nil {
		return ""
	}
	return Serial(cert)
}
