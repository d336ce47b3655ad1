package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
)

// MinRSABits is the smallest RSA modulus k8sapi signs a certificate over:
// NIST SP 800-57's floor for keys in use past 2030 is 2048 bits, and
// Kubernetes' own kubeadm makes none smaller.
const MinRSABits = 2048

// acceptedKey is one row of the key policy: a kind of public key k8sapi
// signs a certificate over, named as a refusal tells it.
type acceptedKey struct {
	name    string
	accepts func(crypto.PublicKey) bool
}

// keyPolicy is the one table of the public keys any certificate request
// may carry (ParseCSR, through which every request is read: a worker's,
// a renewal's, an operator's): these, nothing else.
var keyPolicy = []acceptedKey{
	{"ECDSA P-256", curveIs(elliptic.P256())},
	{"ECDSA P-384", curveIs(elliptic.P384())},
	{"Ed25519", func(k crypto.PublicKey) bool { _, ok := k.(ed25519.PublicKey); return ok }},
	{fmt.Sprintf("RSA of at least %d bits", MinRSABits), func(k crypto.PublicKey) bool {
		r, ok := k.(*rsa.PublicKey)
		return ok && rsaBits(r) >= MinRSABits
	}},
}

func curveIs(c elliptic.Curve) func(crypto.PublicKey) bool {
	return func(k crypto.PublicKey) bool {
		e, ok := k.(*ecdsa.PublicKey)
		return ok && e.Curve == c
	}
}

// ErrKeyPolicy is a request over a key the policy does not accept.
var ErrKeyPolicy = errors.New("the key is not one k8sapi signs")

// CheckKeyPolicy refuses pub unless a row of keyPolicy accepts it, naming
// the key and what is accepted.
func CheckKeyPolicy(pub crypto.PublicKey) error {
	names := make([]string, len(keyPolicy))
	for i, row := range keyPolicy {
		if row.accepts(pub) {
			return nil
		}
		names[i] = row.name
	}
	return fmt.Errorf("%w: it is %s; k8sapi signs only %s", ErrKeyPolicy, describeKey(pub), strings.Join(names, ", "))
}

// describeKey names pub's kind and size, as a refusal tells it.
func describeKey(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA of %d bits", rsaBits(k))
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	}
	return fmt.Sprintf("a %T", pub)
}

// rsaBits is k's modulus size; 0 for a key with none.
func rsaBits(k *rsa.PublicKey) int {
	if k.N == nil {
		return 0
	}
	return k.N.BitLen()
}
