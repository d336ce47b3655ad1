package keyring

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// A node's stored identities are the cert table's leaves: PhaseFounding
// ones issued once at founding, PhaseFetch ones on the first fetch of each
// bootstrap window; all sealed and served unchanged until renewed or
// re-issued. The functions below walk the cert table's names, so a new
// certificate is one row there and nothing here.

// SealIdentities seals the stored identities of the node on vmID, taken
// from issued, in cert-table order. The caller still owns issued's keys.
func SealIdentities(dk *envelope.DataKey, vmID int64, issued map[pki.Name]pki.KeyPair) ([]store.Identity, error) {
	var out []store.Identity
	for _, name := range pki.Names(pki.PhaseFounding) {
		kp, ok := issued[name]
		if !ok {
			return nil, fmt.Errorf("sealing identities of vm %d: %s was not issued", vmID, name)
		}
		id, err := SealIdentity(dk, vmID, name, kp)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// SealIdentity seals one stored identity of the node on vmID, with the
// expiry its certificate states.
func SealIdentity(dk *envelope.DataKey, vmID int64, name pki.Name, kp pki.KeyPair) (store.Identity, error) {
	notAfter, err := pki.NotAfter(kp.CertPEM)
	if err != nil {
		return store.Identity{}, fmt.Errorf("sealing %s of vm %d: %w", name, vmID, err)
	}
	sealed, err := dk.Seal(keyPurpose(name, vmID), kp.KeyPEM)
	if err != nil {
		return store.Identity{}, fmt.Errorf("sealing %s of vm %d: %w", name, vmID, err)
	}
	return store.Identity{Name: string(name), Cert: string(kp.CertPEM), KeySealed: sealed, NotAfter: notAfter}, nil
}

// OpenIdentities opens every stored identity of node n issued at founding.
// An identity the cert table expects but the row lacks does not open
// either (ErrOpen): the node cannot be served a bundle without it.
func OpenIdentities(dk *envelope.DataKey, n store.Node) (map[pki.Name]pki.KeyPair, error) {
	byName := identitiesByName(n)
	out := map[pki.Name]pki.KeyPair{}
	for _, name := range pki.Names(pki.PhaseFounding) {
		id, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("opening %s of vm %d: not stored: %w", name, n.VMID, envelope.ErrOpen)
		}
		kp, err := openIdentity(dk, n.VMID, id)
		if err != nil {
			return nil, err
		}
		out[name] = kp
	}
	return out, nil
}

// OpenWindowIdentities opens node n's identities named in names that were
// issued for its current bootstrap window. complete is false when one is
// missing or from an earlier window: the window's first fetch issues them.
func OpenWindowIdentities(dk *envelope.DataKey, n store.Node, names []pki.Name) (ids map[pki.Name]pki.KeyPair, complete bool, err error) {
	byName := identitiesByName(n)
	ids = map[pki.Name]pki.KeyPair{}
	for _, name := range names {
		id, ok := byName[name]
		if !ok || id.WindowOpenedAt == nil || !id.WindowOpenedAt.Equal(n.BootstrapOpenedAt) {
			return nil, false, nil
		}
		if ids[name], err = openIdentity(dk, n.VMID, id); err != nil {
			return nil, false, err
		}
	}
	return ids, true, nil
}

// SealWindowIdentities seals the identities issued for node n's current
// bootstrap window, in names' order; bootstrapOnly says which serve the
// bootstrap alone.
func SealWindowIdentities(dk *envelope.DataKey, n store.Node, names []pki.Name, issued map[pki.Name]pki.KeyPair,
	bootstrapOnly func(pki.Name) bool) ([]store.Identity, error) {
	var out []store.Identity
	for _, name := range names {
		id, err := SealIdentity(dk, n.VMID, name, issued[name])
		if err != nil {
			return nil, err
		}
		opened := n.BootstrapOpenedAt
		id.WindowOpenedAt, id.BootstrapOnly = &opened, bootstrapOnly(name)
		out = append(out, id)
	}
	return out, nil
}

func identitiesByName(n store.Node) map[pki.Name]store.Identity {
	byName := make(map[pki.Name]store.Identity, len(n.Identities))
	for _, id := range n.Identities {
		byName[pki.Name(id.Name)] = id
	}
	return byName
}

func openIdentity(dk *envelope.DataKey, vmID int64, id store.Identity) (pki.KeyPair, error) {
	name := pki.Name(id.Name)
	key, err := dk.Open(keyPurpose(name, vmID), id.KeySealed)
	if err != nil {
		return pki.KeyPair{}, fmt.Errorf("opening %s of vm %d: %w", name, vmID, err)
	}
	return pki.KeyPair{CertPEM: []byte(id.Cert), KeyPEM: key}, nil
}
