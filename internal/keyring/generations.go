package keyring

import (
	"bytes"
	"crypto"
	"fmt"
	"slices"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// A root of trust (a CA or the service-account signer) holds one or more
// generations (migration 034): next, current, previous, each sealed in its
// own row. Every trust file a node is served holds every generation not
// retired, oldest first; leaves and tokens are signed by the current one.
// A root without a row is generation 1, current, in its kube_clusters
// columns: what every cluster founded holds until its first rotation.

// Root is one root of trust: its name in the API and its id in the
// generations' rows (the cert table's CA name, or store.RootServiceAccount).
type Root struct{ Name, ID string }

// Roots is the one table of the roots a rotation may rotate, in the order
// they are shown and rotated.
var Roots = []Root{
	{"cluster", string(pki.ClusterCA)},
	{"etcd", string(pki.EtcdCA)},
	{"front-proxy", string(pki.FrontProxyCA)},
	{"service-account", store.RootServiceAccount},
}

// Generations are root's generations of c, oldest first, retired ones
// included: its rows, or its columns as generation 1.
func Generations(c *store.Cluster, root string) []store.CAGeneration {
	var out []store.CAGeneration
	for _, g := range c.CAGenerations {
		if g.Root == root {
			out = append(out, g)
		}
	}
	if len(out) > 0 {
		return out
	}
	return []store.CAGeneration{GenerationOne(c, root)}
}

// Resolved is a copy of c whose CAGenerations holds every root's
// generations, a root without rows as its generation 1 read from its
// columns: what Generations answers for each root, each CA certificate's
// expiry read once. A view asks for a root's generations several times
// (its current one, the roots it shows), and reading the certificate at
// every ask was a third of a page of clusters' CPU. For reading only: a
// rotation tells a root's rows from its columns.
func Resolved(c *store.Cluster) *store.Cluster {
	r := *c
	r.CAGenerations = nil
	for _, root := range Roots {
		r.CAGenerations = append(r.CAGenerations, Generations(c, root.ID)...)
	}
	return &r
}

// GenerationOne is root's generation 1 as c's columns hold it: what a
// rotation adopts into a row before it adds generation 2.
func GenerationOne(c *store.Cluster, root string) store.CAGeneration {
	g := store.CAGeneration{Root: root, Generation: 1, State: store.GenCurrent}
	if root == store.RootServiceAccount {
		g.Cert, g.KeySealed = c.ServiceAccountPub, c.ServiceAccountKeySealed
		return g
	}
	for _, col := range sealedCAs(c) {
		if string(col.name) == root {
			g.Cert, g.KeySealed = *col.cert, *col.key
		}
	}
	if end, err := pki.ExpiresAt([]byte(g.Cert)); err == nil {
		g.NotAfter = &end
	}
	return g
}

// trusted are root's generations not retired, oldest first.
func trusted(c *store.Cluster, root string) []store.CAGeneration {
	return slices.DeleteFunc(Generations(c, root), func(g store.CAGeneration) bool { return g.State == store.GenRetired })
}

// Current is root's signing generation.
func Current(c *store.Cluster, root string) (store.CAGeneration, error) {
	return InState(c, root, store.GenCurrent)
}

// TrustPEM is root's trust file: every generation not retired, oldest
// first, one PEM after the other (CA certificates, or the signer's public
// keys for service-account: the API server verifies tokens against each).
func TrustPEM(c *store.Cluster, root string) []byte {
	var b bytes.Buffer
	for _, g := range trusted(c, root) {
		b.WriteString(g.Cert)
		if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// genPurpose is what the sealed key of root's generation gen names in its
// additional data. Generation 1 keeps the purpose founding sealed it with
// ("ca-key", "service-account-key"), so every key sealed before rotations
// still opens; from 2 on the generation is named, so no generation's key
// opens as another's.
func genPurpose(root string, gen int) envelope.Purpose {
	p := envelope.Purpose{Name: PurposeServiceAccount}
	if root != store.RootServiceAccount {
		p = keyPurpose(pki.Name(root), 0)
	}
	if gen > 1 {
		p.Name = fmt.Sprintf("%s@generation-%d", p.Name, gen)
	}
	return p
}

// openCurrent opens root's current generation's key (PEM).
func openCurrent(dk *envelope.DataKey, c *store.Cluster, root string) (store.CAGeneration, []byte, error) {
	g, err := Current(c, root)
	if err != nil {
		return g, nil, err
	}
	return openGeneration(dk, root, g)
}

// InState is root's one generation in state (next, current, previous).
func InState(c *store.Cluster, root, state string) (store.CAGeneration, error) {
	for _, g := range Generations(c, root) {
		if g.State == state {
			return g, nil
		}
	}
	return store.CAGeneration{}, fmt.Errorf("cluster %d's %s has no %s generation", c.ID, root, state)
}

// openGeneration opens generation g of root's key (PEM).
func openGeneration(dk *envelope.DataKey, root string, g store.CAGeneration) (store.CAGeneration, []byte, error) {
	keyPEM, err := dk.Open(genPurpose(root, g.Generation), g.KeySealed)
	if err != nil {
		return g, nil, fmt.Errorf("opening %s generation %d key: %w", root, g.Generation, err)
	}
	return g, keyPEM, nil
}

// openCurrentCA opens the CA name's current generation.
func openCurrentCA(dk *envelope.DataKey, c *store.Cluster, name pki.Name) (*pki.CA, error) {
	g, err := Current(c, string(name))
	if err != nil {
		return nil, err
	}
	return OpenGenerationCA(dk, name, g)
}

// OpenGenerationCA opens generation g of the CA name: what a phase move
// signs the etcd CRL with before g becomes current.
func OpenGenerationCA(dk *envelope.DataKey, name pki.Name, g store.CAGeneration) (*pki.CA, error) {
	g, keyPEM, err := openGeneration(dk, string(name), g)
	if err != nil {
		return nil, err
	}
	ca, err := pki.LoadCA([]byte(g.Cert), keyPEM)
	clear(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading %s generation %d: %w", name, g.Generation, err)
	}
	return ca, nil
}

// NewGeneration makes and seals generation gen of root (state next): a
// CA of the issuer's algorithm, or a service-account signer.
func NewGeneration(dk *envelope.DataKey, is pki.Issuer, root string, gen int) (store.CAGeneration, error) {
	g := store.CAGeneration{Root: root, Generation: gen, State: store.GenNext}
	cert, key, err := newRootMaterial(is, root, gen)
	if err != nil {
		return g, err
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return g, fmt.Errorf("encoding %s generation %d key: %w", root, gen, err)
	}
	defer clear(keyPEM)
	if g.KeySealed, err = dk.Seal(genPurpose(root, gen), keyPEM); err != nil {
		return g, fmt.Errorf("sealing %s generation %d key: %w", root, gen, err)
	}
	g.Cert = string(cert)
	if end, err := pki.ExpiresAt(cert); err == nil {
		g.NotAfter = &end
	}
	return g, nil
}

// newRootMaterial is a new root's certificate (or public key) and key.
func newRootMaterial(is pki.Issuer, root string, gen int) ([]byte, crypto.Signer, error) {
	if root != store.RootServiceAccount {
		ca, err := is.NewRoot(pki.Name(root), gen)
		if err != nil {
			return nil, nil, err
		}
		return ca.CertPEM, ca.Key, nil
	}
	key, err := is.NewSigner()
	if err != nil {
		return nil, nil, fmt.Errorf("generating service-account generation %d key: %w", gen, err)
	}
	pub, err := pki.EncodePublicKey(key.Public())
	return pub, key, err
}
