package controlplane

import (
	"context"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// A removed control-plane node's etcd identities are revoked (issue 43,
// item 2; docs/REPLACE-NODE.md): the serials of every etcd-CA certificate
// it was ever given, still unexpired, go on a new CRL signed by the etcd
// CA, stored in the transaction that removes its row. Every member fetches
// it within a minute (exk8s-etcd-crl.timer) and etcd reads it at each
// handshake.

// etcdRevocation is the CRL that adds node's etcd-CA certificates to the
// cluster's: nil when it holds none unexpired (a new node whose identities
// were never issued), so nothing is signed and no key opened.
func (s *Service) etcdRevocation(ctx context.Context, c *store.Cluster, node store.Node) (*store.NewEtcdCRL, error) {
	now := s.Clock().UTC()
	base, err := s.Store.EtcdRevocationBase(ctx, c.ID, node.ID, now)
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	add, err := newRevocations(base, node.Name, now)
	if err != nil || len(add) == 0 {
		return nil, err
	}
	trust, err := keyring.OpenCA(ctx, s.Envelope, c, pki.EtcdCA)
	if err != nil {
		return nil, usecase.KMSError(err)
	}
	number := base.Number + 1
	crl, err := pki.SignCRL(trust.CAs[pki.EtcdCA], number, revokedOf(append(base.Listed, add...)), now)
	if err != nil {
		return nil, err
	}
	return &store.NewEtcdCRL{Number: number, PEM: string(crl), SignedAt: now, Add: add}, nil
}

// newRevocations are the serials of base's held certificates that are
// unexpired at now and not listed yet.
func newRevocations(base store.RevocationBase, nodeName string, now time.Time) ([]store.EtcdRevocation, error) {
	var out []store.EtcdRevocation
	for _, cert := range base.Held {
		serial, notAfter, err := pki.SerialHex([]byte(cert))
		if err != nil {
			return nil, err
		}
		listed := func(r store.EtcdRevocation) bool { return r.Serial == serial }
		if !notAfter.After(now) || slices.ContainsFunc(base.Listed, listed) || slices.ContainsFunc(out, listed) {
			continue
		}
		out = append(out, store.EtcdRevocation{Serial: serial, NodeName: nodeName, NotAfter: notAfter, RevokedAt: now})
	}
	return out, nil
}

func revokedOf(list []store.EtcdRevocation) []pki.Revoked {
	out := make([]pki.Revoked, len(list))
	for i, r := range list {
		out[i] = pki.Revoked{Serial: r.Serial, RevokedAt: r.RevokedAt}
	}
	return out
}
