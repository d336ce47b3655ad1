package keyring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// A node's stored identities are the cert table's PhaseFounding entries:
// issued once at founding, sealed, and served unchanged by every fetch. Both
// directions below walk pki.Names(pki.PhaseFounding), so a new stored
// certificate is one row in the cert table and nothing here.

// NodeFacts are the facts node n's certificates name, taken from its
// cluster's row: the one place founding and bundle fetches build them.
func NodeFacts(c *store.Cluster, n store.Node) (pki.Node, error) {
	serviceIP, _, err := bundle.ServiceIPs(c.ServiceCIDR)
	if err != nil {
		return pki.Node{}, fmt.Errorf("service IP of cluster %d: %w", c.ID, err)
	}
	return pki.Node{Name: n.Name, ControlPlaneDNSName: c.ControlPlaneDNSName, ClusterDomain: c.ClusterDomain,
		IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4, ServiceIP: serviceIP}, nil
}

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

// OpenIdentities opens every stored identity of node n. An identity the
// cert table expects but the row lacks does not open either (ErrOpen): the
// node cannot be served a bundle without it.
func OpenIdentities(dk *envelope.DataKey, n store.Node) (map[pki.Name]pki.KeyPair, error) {
	byName := make(map[string]store.Identity, len(n.Identities))
	for _, id := range n.Identities {
		byName[id.Name] = id
	}
	out := map[pki.Name]pki.KeyPair{}
	for _, name := range pki.Names(pki.PhaseFounding) {
		id, ok := byName[string(name)]
		if !ok {
			return nil, fmt.Errorf("opening %s of vm %d: not stored: %w", name, n.VMID, envelope.ErrOpen)
		}
		key, err := dk.Open(keyPurpose(name, n.VMID), id.KeySealed)
		if err != nil {
			return nil, fmt.Errorf("opening %s of vm %d: %w", name, n.VMID, err)
		}
		out[name] = pki.KeyPair{CertPEM: []byte(id.Cert), KeyPEM: key}
	}
	return out, nil
}

// OpenError classifies a failure to open a cluster's sealed keys, for every
// use case that opens them: KMS unreachable is 503; a sealed value that does
// not open (tampered, moved, missing) is a 500 whose event is logged with the
// cluster and VM (0 for the cluster's own keys), never the key.
func OpenError(ctx context.Context, log *slog.Logger, c *store.Cluster, vmID int64, err error) error {
	if errors.Is(err, envelope.ErrOpen) {
		log.ErrorContext(ctx, "sealed key material does not open", "cluster_id", c.ID, "vm_id", vmID)
		return apperr.Wrap(apperr.Internal, "internal", "internal error", err)
	}
	return apperr.Wrap(apperr.Unavailable, "kms_unavailable", "the key service is unavailable", err)
}
