package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Algorithm is the key algorithm of every key of one cluster.
type Algorithm string

const (
	// ECDSAP256 is the default: a P-256 key costs microseconds, RSA-2048 ~50 ms.
	ECDSAP256 Algorithm = "ecdsa-p256"
	RSA2048   Algorithm = "rsa-2048"
)

// ParseAlgorithm accepts the API's spelling; empty means the default.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch Algorithm(s) {
	case "", ECDSAP256:
		return ECDSAP256, nil
	case RSA2048:
		return RSA2048, nil
	}
	return "", fmt.Errorf("must be %q or %q", ECDSAP256, RSA2048)
}

// GenerateKey makes a new private key of the algorithm.
func GenerateKey(alg Algorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSAP256, "":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("unknown key algorithm %q", alg)
}

// Issuer makes keys and certificates. Clock and key generation are injected
// so tests can use a fixed clock and fixture keys.
type Issuer struct {
	Algorithm Algorithm
	Now       func() time.Time
	// NewKey overrides key generation (tests); nil means GenerateKey(Algorithm).
	NewKey func() (crypto.Signer, error)
	// LeafLifetime overrides the cert table's lifetime of every leaf; zero
	// keeps the table's. CAs keep theirs.
	LeafLifetime time.Duration
}

// lifetime is how long a certificate of spec issued now lives.
func (is Issuer) lifetime(spec Spec) time.Duration {
	if !spec.IsCA && !spec.FixedLifetime && is.LeafLifetime > 0 {
		return is.LeafLifetime
	}
	return spec.Lifetime
}

func (is Issuer) now() time.Time {
	if is.Now != nil {
		return is.Now()
	}
	return time.Now()
}

func (is Issuer) newKey() (crypto.Signer, error) {
	if is.NewKey != nil {
		return is.NewKey()
	}
	return GenerateKey(is.Algorithm)
}

// CA is a signing certificate with its key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// KeyPair is an issued certificate and its private key, both PEM.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Trust is the cluster-wide trust: the three CAs, the service-account key
// and the key Secrets are encrypted with in etcd. Made once at founding and
// sealed; CA keys never leave k8sapi, the other two go to the control-plane
// nodes that use them.
type Trust struct {
	CAs            map[Name]*CA
	ServiceAccount crypto.Signer
	// SecretsEncryptionKey is the API servers' secretbox key for Secrets
	// at rest; nil for a cluster founded before k8sapi made one.
	SecretsEncryptionKey []byte
}

// SecretsEncryptionKeySize is the length of a Secrets encryption key:
// secretbox (XSalsa20-Poly1305) takes 32 bytes.
const SecretsEncryptionKeySize = 32

// NewTrust creates the cluster's CAs and service-account key pair.
func (is Issuer) NewTrust() (*Trust, error) {
	t := &Trust{CAs: map[Name]*CA{}}
	for _, spec := range CertList() {
		if spec.Phase != PhaseRoot {
			continue
		}
		ca, err := is.newCA(spec)
		if err != nil {
			return nil, err
		}
		t.CAs[spec.Name] = ca
	}
	sa, err := is.newKey()
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	t.ServiceAccount = sa
	t.SecretsEncryptionKey = make([]byte, SecretsEncryptionKeySize)
	if _, err := rand.Read(t.SecretsEncryptionKey); err != nil {
		return nil, fmt.Errorf("generating the secrets encryption key: %w", err)
	}
	return t, nil
}

// RestoredTrust is the trust of a cluster restored from a snapshot of
// old's cluster: old's CAs, service-account key and Secrets encryption
// key, except the CAs the table makes anew on a restore (NewOnRestore).
func (is Issuer) RestoredTrust(old *Trust) (*Trust, error) {
	t := &Trust{CAs: map[Name]*CA{}, ServiceAccount: old.ServiceAccount, SecretsEncryptionKey: old.SecretsEncryptionKey}
	for _, spec := range CertList() {
		if spec.Phase != PhaseRoot {
			continue
		}
		ca, err := is.restoredCA(spec, old)
		if err != nil {
			return nil, err
		}
		t.CAs[spec.Name] = ca
	}
	return t, nil
}

// restoredCA is old's CA of spec, or a new one where the table says so.
func (is Issuer) restoredCA(spec Spec, old *Trust) (*CA, error) {
	if spec.NewOnRestore {
		return is.newCA(spec)
	}
	ca, ok := old.CAs[spec.Name]
	if !ok {
		return nil, fmt.Errorf("the restored cluster's %s is missing from its snapshot's cluster", spec.Name)
	}
	return ca, nil
}

// newCA makes the self-signed root CA of spec.
func (is Issuer) newCA(spec Spec) (*CA, error) {
	key, err := is.newKey()
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", spec.Name, err)
	}
	cert, der, err := is.sign(spec, Subject{}, key.Public(), nil, key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: EncodeCert(der), Key: key}, nil
}

// Issue makes the named certificate for node n, signed by its CA in t.
func (is Issuer) Issue(t *Trust, name Name, n Subject) (KeyPair, error) {
	spec, ca, err := is.leaf(t, name)
	if err != nil {
		return KeyPair{}, err
	}
	key, err := is.newKey()
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating %s key: %w", name, err)
	}
	_, der, err := is.sign(spec, n, key.Public(), ca.Cert, ca.Key)
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("encoding %s key: %w", name, err)
	}
	return KeyPair{CertPEM: EncodeCert(der), KeyPEM: keyPEM}, nil
}

// leaf finds the named leaf's spec and its signing CA in t.
func (is Issuer) leaf(t *Trust, name Name) (Spec, *CA, error) {
	spec, ok := Lookup(name)
	if !ok || spec.IsCA {
		return Spec{}, nil, fmt.Errorf("issuing %s: not a leaf in the cert table", name)
	}
	ca := t.CAs[spec.Signer]
	if ca == nil {
		return Spec{}, nil, fmt.Errorf("issuing %s: signer %s not loaded", name, spec.Signer)
	}
	return spec, ca, nil
}

// IssuePhase issues every leaf of one phase node n gets, keyed by name.
func (is Issuer) IssuePhase(t *Trust, phase Phase, n Subject) (map[Name]KeyPair, error) {
	out := map[Name]KeyPair{}
	for _, name := range IssuedTo(phase, n.Initial) {
		kp, err := is.Issue(t, name, n)
		if err != nil {
			return nil, err
		}
		out[name] = kp
	}
	return out, nil
}

// sign builds the template from spec and signs it; parent nil means self-signed.
func (is Issuer) sign(spec Spec, n Subject, pub crypto.PublicKey, parent *x509.Certificate, signer crypto.Signer) (*x509.Certificate, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("serial for %s: %w", spec.Name, err)
	}
	now := is.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.CommonName(n), Organization: spec.organization(n)},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(is.lifetime(spec)),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.Usages,
	}
	if _, isRSA := pub.(*rsa.PublicKey); isRSA {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	if spec.IsCA {
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	if spec.SANs != nil {
		tmpl.DNSNames, tmpl.IPAddresses = spec.SANs(n)
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, fmt.Errorf("signing %s: %w", spec.Name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", spec.Name, err)
	}
	return cert, der, nil
}

// LoadCA rehydrates a CA from its certificate PEM and private key PEM.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("CA key does not match its certificate")
	}
	return &CA{Cert: cert, CertPEM: certPEM, Key: key}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	ea, ok := a.(equaler)
	return ok && ea.Equal(b)
}
