package carotation

import (
	"context"

	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The etcd CRL follows the etcd CA (docs/CA-ROTATION.md): every member's
// etcd unit installs the CRL only once it verifies against etcd-ca.pem
// (exk8s-etcd-crl.sh), so whenever a phase move changes which etcd CA
// generation signs, the cluster's CRL is signed again by that generation,
// with a higher number (each member's CRL timer installs it within a
// minute, and the renewal answers it with the trust files), stored in the
// move's transaction. Before the distrust the nodes trust both
// generations, so the CRL verifies either way; after it, against the new
// one alone.

// crlSigners is the one table of the moves that sign the CRL again and
// the state, before the move, of the generation that signs it: signing's
// next (current after it), the distrust's current (again, so a CRL a
// retirement signed with the old generation while signing began is
// replaced before the old one leaves), an abort's step back its previous
// (current again), an abort's end its current.
var crlSigners = map[[2]string]string{
	{store.PhaseTrusting, store.PhaseSigning}:      store.GenNext,
	{store.PhaseSigning, store.PhaseDistrusting}:   store.GenCurrent,
	{store.PhaseUntrusting, store.PhaseUntrusting}: store.GenPrevious,
	{store.PhaseUntrusting, store.PhaseAborted}:    store.GenCurrent,
}

// resignedCRL is the CRL the move from from to to stores: nil when the
// rotation leaves the etcd CA alone or the move changes no signer (an
// abort's step back before signing began has no previous generation).
func (s *Service) resignedCRL(ctx context.Context, r *rotating, from, to string) (*store.NewEtcdCRL, error) {
	state, ok := crlSigners[[2]string{from, to}]
	if !ok || !r.row.Rotates(string(pki.EtcdCA)) {
		return nil, nil
	}
	// The generations as they stand now: the claim's are older than the
	// steps this drive already took.
	c, err := s.Store.Cluster(ctx, r.c.OrgID, r.c.ID)
	if err != nil {
		return nil, usecase.Recorded(err)
	}
	g, err := keyring.InState(&c, string(pki.EtcdCA), state)
	if err != nil && state == store.GenPrevious {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ca, err := s.openEtcdCA(ctx, r, g)
	if err != nil {
		return nil, err
	}
	return s.signCRL(ctx, r.c.ID, ca)
}

// openEtcdCA opens generation g of r's cluster's etcd CA.
func (s *Service) openEtcdCA(ctx context.Context, r *rotating, g store.CAGeneration) (*pki.CA, error) {
	dk, err := s.Envelope.OpenDataKey(ctx, keyring.Scope(&r.c), r.c.WrappedDataKey)
	if err != nil {
		return nil, usecase.KMSError(err)
	}
	return keyring.OpenGenerationCA(dk, pki.EtcdCA, g)
}

// signCRL is the cluster's CRL signed again by ca: the revocations still
// listed, one number past the stored one.
func (s *Service) signCRL(ctx context.Context, clusterID int64, ca *pki.CA) (*store.NewEtcdCRL, error) {
	now := s.Clock().UTC()
	base, err := s.Store.EtcdRevocationBase(ctx, clusterID, 0, now) // node 0: none, nothing held
	if err != nil {
		return nil, usecase.Recorded(err)
	}
	revoked := make([]pki.Revoked, len(base.Listed))
	for i, l := range base.Listed {
		revoked[i] = pki.Revoked{Serial: l.Serial, RevokedAt: l.RevokedAt}
	}
	pem, err := pki.SignCRL(ca, base.Number+1, revoked, now)
	if err != nil {
		return nil, err
	}
	return &store.NewEtcdCRL{Number: base.Number + 1, PEM: string(pem), SignedAt: now}, nil
}
