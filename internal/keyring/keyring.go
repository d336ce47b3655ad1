// Package keyring moves a cluster's trust between pki (keys in memory) and
// store (keys sealed by envelope): Seal before a key touches Postgres, Open
// when a bundle or a replay needs the CAs again.
//
// In: a pki.Trust or a store.Cluster, an envelope data key. Out: sealed
// columns, or a rehydrated pki.Trust. One table (sealedCAs) lists which
// column holds which CA; a node's stored identities are not listed here at
// all: they follow the cert table (pki.PhaseFounding), see identities.go.
// Errors are plain (envelope.ErrOpen for a sealed value that does not
// open): which error kind a caller answers is the use case's to say.
package keyring

import (
	"context"
	"fmt"
	"slices"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// PurposeServiceAccount and PurposeSecretsEncryption are bound into the
// sealed service-account key's and Secrets encryption key's additional data;
// every other sealed key is named by keyPurpose.
const (
	PurposeServiceAccount    = "service-account-key"
	PurposeSecretsEncryption = "secrets-encryption-key"
)

// caColumns are the columns of one CA on a cluster's row: its certificate
// and its sealed key.
type caColumns struct {
	name pki.Name
	cert *string
	key  *[]byte
}

// sealedCAs is the one table of which columns of c hold which CA.
func sealedCAs(c *store.Cluster) []caColumns {
	return []caColumns{
		{pki.ClusterCA, &c.CACert, &c.CAKeySealed},
		{pki.EtcdCA, &c.EtcdCACert, &c.EtcdCAKeySealed},
		{pki.FrontProxyCA, &c.FrontProxyCACert, &c.FrontProxyCAKeySealed},
	}
}

// keyPurpose is what a sealed key's additional data names besides its
// cluster: the cert table's entry and the VM (0 for a CA). The spelling
// "<name>-key" is also what the per-column purposes of the first schema
// were ("etcd-peer-key", "apiserver-key"), so keys sealed before node
// identities became rows still open.
func keyPurpose(name pki.Name, vmID int64) envelope.Purpose {
	return envelope.Purpose{Name: string(name) + "-key", VMID: vmID}
}

// SealTrust seals t's CA keys, service-account key and Secrets encryption
// key into c's columns.
func SealTrust(dk *envelope.DataKey, t *pki.Trust, c *store.Cluster) error {
	if err := sealCAs(dk, t, c); err != nil {
		return err
	}
	if err := sealServiceAccount(dk, t, c); err != nil {
		return err
	}
	return sealSecretsKey(dk, t, c)
}

func sealCAs(dk *envelope.DataKey, t *pki.Trust, c *store.Cluster) error {
	for _, col := range sealedCAs(c) {
		ca := t.CAs[col.name]
		keyPEM, err := pki.EncodeKey(ca.Key)
		if err != nil {
			return fmt.Errorf("encoding %s key: %w", col.name, err)
		}
		sealed, err := dk.Seal(keyPurpose(col.name, 0), keyPEM)
		clear(keyPEM)
		if err != nil {
			return fmt.Errorf("sealing %s key: %w", col.name, err)
		}
		*col.cert, *col.key = string(ca.CertPEM), sealed
	}
	return nil
}

func sealServiceAccount(dk *envelope.DataKey, t *pki.Trust, c *store.Cluster) error {
	saKey, err := pki.EncodeKey(t.ServiceAccount)
	if err != nil {
		return fmt.Errorf("encoding service-account key: %w", err)
	}
	defer clear(saKey)
	saPub, err := pki.EncodePublicKey(t.ServiceAccount.Public())
	if err != nil {
		return fmt.Errorf("encoding service-account public key: %w", err)
	}
	if c.ServiceAccountKeySealed, err = dk.Seal(envelope.Purpose{Name: PurposeServiceAccount}, saKey); err != nil {
		return fmt.Errorf("sealing service-account key: %w", err)
	}
	c.ServiceAccountPub = string(saPub)
	return nil
}

// sealSecretsKey seals the Secrets encryption key; a trust made at founding
// always has one.
func sealSecretsKey(dk *envelope.DataKey, t *pki.Trust, c *store.Cluster) error {
	if len(t.SecretsEncryptionKey) != pki.SecretsEncryptionKeySize {
		return fmt.Errorf("sealing the secrets encryption key: it has %d bytes, want %d", len(t.SecretsEncryptionKey), pki.SecretsEncryptionKeySize)
	}
	sealed, err := dk.Seal(envelope.Purpose{Name: PurposeSecretsEncryption}, t.SecretsEncryptionKey)
	if err != nil {
		return fmt.Errorf("sealing the secrets encryption key: %w", err)
	}
	c.SecretsEncryptionKeySealed = sealed
	return nil
}

// openSecretsKey opens c's Secrets encryption key: nil for a cluster
// founded before keys were made (migration 010), whose bundles render no
// encryption; a sealed value that does not open fails like any other.
func openSecretsKey(dk *envelope.DataKey, c *store.Cluster) ([]byte, error) {
	if c.SecretsEncryptionKeySealed == nil {
		return nil, nil
	}
	key, err := dk.Open(envelope.Purpose{Name: PurposeSecretsEncryption}, c.SecretsEncryptionKeySealed)
	if err != nil {
		return nil, fmt.Errorf("opening the secrets encryption key: %w", err)
	}
	return key, nil
}

// Scope is the envelope scope of c.
func Scope(c *store.Cluster) envelope.Scope {
	return envelope.Scope{OrgID: c.OrgID, ClusterID: c.ID}
}

// Opened is a cluster's rehydrated trust and the data key that opened it.
type Opened struct {
	Trust             *pki.Trust
	DataKey           *envelope.DataKey
	ServiceAccountKey []byte // PEM, for the bundle
}

// Open unwraps c's data key (one KMS Decrypt unless cached) and rehydrates
// its CAs' and service-account signer's current generations and its
// Secrets encryption key.
func Open(ctx context.Context, env *envelope.Envelope, c *store.Cluster) (*Opened, error) {
	dk, err := env.OpenDataKey(ctx, Scope(c), c.WrappedDataKey)
	if err != nil {
		return nil, err
	}
	t := &pki.Trust{CAs: map[pki.Name]*pki.CA{}}
	for _, name := range bundleCAs {
		if t.CAs[name], err = openCurrentCA(dk, c, name); err != nil {
			return nil, err
		}
	}
	_, saKey, err := openCurrent(dk, c, store.RootServiceAccount)
	if err != nil {
		return nil, err
	}
	if t.ServiceAccount, err = pki.ParseKey(saKey); err != nil {
		return nil, fmt.Errorf("loading service-account key: %w", err)
	}
	if t.SecretsEncryptionKey, err = openSecretsKey(dk, c); err != nil {
		return nil, err
	}
	return &Opened{Trust: t, DataKey: dk, ServiceAccountKey: saKey}, nil
}

// bundleCAs are the CAs of a cluster, in the cert table's order.
var bundleCAs = []pki.Name{pki.ClusterCA, pki.EtcdCA, pki.FrontProxyCA}

// CANames are the CAs of a cluster, in the cert table's order: the keys
// of CACerts, without building their trust files.
func CANames() []pki.Name { return slices.Clone(bundleCAs) }

// OpenCA unwraps c's data key (one KMS Decrypt unless cached) and
// rehydrates the current generation of the one CA named, nothing else:
// what signing an operator's identity needs. The trust it returns holds
// that CA only.
func OpenCA(ctx context.Context, env *envelope.Envelope, c *store.Cluster, name pki.Name) (*pki.Trust, error) {
	if !slices.Contains(bundleCAs, name) {
		return nil, fmt.Errorf("opening %s: not a sealed CA", name)
	}
	dk, err := env.OpenDataKey(ctx, Scope(c), c.WrappedDataKey)
	if err != nil {
		return nil, err
	}
	ca, err := openCurrentCA(dk, c, name)
	if err != nil {
		return nil, err
	}
	return &pki.Trust{CAs: map[pki.Name]*pki.CA{name: ca}}, nil
}

// CACerts returns c's CA trust files (PEM) by cert-table name: every
// generation of each CA not retired, oldest first (TrustPEM).
func CACerts(c *store.Cluster) map[pki.Name][]byte {
	out := make(map[pki.Name][]byte, len(bundleCAs))
	for _, name := range bundleCAs {
		out[name] = TrustPEM(c, string(name))
	}
	return out
}

// ServiceAccountPub is c's service-account trust file: the public key of
// every generation of the signer not retired.
func ServiceAccountPub(c *store.Cluster) []byte { return TrustPEM(c, store.RootServiceAccount) }
