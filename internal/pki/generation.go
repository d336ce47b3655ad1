package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// NewRoot makes generation gen of the root CA name (a rotation's new CA):
// the cert table's root, its common name suffixed with the generation from
// 2 on, so two generations in one bundle are told apart by a human as
// well as by their key identifiers.
func (is Issuer) NewRoot(name Name, gen int) (*CA, error) {
	spec, ok := Lookup(name)
	if !ok || spec.Phase != PhaseRoot {
		return nil, fmt.Errorf("making a root: %s is no root of the cert table", name)
	}
	if gen > 1 {
		cn := spec.CommonName(Subject{})
		spec.CommonName = fixed(fmt.Sprintf("%s-%d", cn, gen))
	}
	return is.newCA(spec)
}

// NewSigner makes a new service-account signer key of the issuer's
// algorithm.
func (is Issuer) NewSigner() (crypto.Signer, error) { return is.newKey() }

// ParseCerts reads every PEM certificate of a bundle, in order.
func ParseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return out, nil
}
