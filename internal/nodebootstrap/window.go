package nodebootstrap

import (
	"cmp"
	"context"
	"maps"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// A node's fetch-phase identities are issued once per bootstrap window: the
// window's first fetch issues and stores them sealed, every later fetch in
// the window is served the same ones. Fetching again mints nothing, so a
// VM that fetches in a loop gains no new system:masters certificate.
//
// The initial node's system:masters identity (pki.Admin, bootstrap-only)
// lives one window's length from its issue: enough for the addons script,
// which runs minutes after the fetch, and useless soon after the node is
// ready. It is never renewed.

// windowIdentities opens t's node's identities of its current window. On
// the window's first fetch it issues them and returns them sealed too, for
// the fetch's record to store (store.FetchWrites.Window).
func (s *Service) windowIdentities(ctx context.Context, t *target, opened *keyring.Opened,
	initial bool) (map[pki.Name]pki.KeyPair, *store.WindowIdentities, error) {
	names := pki.IssuedTo(pki.PhaseFetch, initial)
	ids, complete, err := keyring.OpenWindowIdentities(opened.DataKey, t.self, names)
	if err != nil || complete {
		return ids, nil, s.openError(ctx, t, err)
	}
	return s.issueWindow(t, opened, names, initial)
}

// issueWindow issues t's node's identities for its current window and
// seals them for storing.
func (s *Service) issueWindow(t *target, opened *keyring.Opened, names []pki.Name,
	initial bool) (map[pki.Name]pki.KeyPair, *store.WindowIdentities, error) {
	subject, err := t.cluster.CertSubject(t.node)
	if err != nil {
		return nil, nil, err
	}
	subject.Initial = initial
	issued := map[pki.Name]pki.KeyPair{}
	for _, name := range names {
		if issued[name], err = s.windowIssuer(t.cluster.Algorithm, name).Issue(opened.Trust, name, subject); err != nil {
			return nil, nil, err
		}
	}
	self := t.self
	sealed, err := keyring.SealWindowIdentities(opened.DataKey, self, names, issued, bootstrapOnly)
	if err != nil {
		return nil, nil, err
	}
	return issued, &store.WindowIdentities{VMID: self.VMID, OpenedAt: self.BootstrapOpenedAt, Issued: sealed}, nil
}

// renderStored renders p again with the window identities a racing first
// fetch stored before this one's (its own were not written): every fetch of
// a window serves the same identities. Rare, so its extra round trip is
// paid only here.
func (s *Service) renderStored(ctx context.Context, t *target, p *plan) (*bundle.Bundle, error) {
	ids, err := s.storedWindow(ctx, t, p.opened, pki.IssuedTo(pki.PhaseFetch, p.in.IsInitial()))
	if err != nil {
		return nil, err
	}
	maps.Copy(p.in.Identities, ids)
	return s.Renderer.Render(p.in)
}

// storedWindow reads back the window identities a racing fetch stored.
func (s *Service) storedWindow(ctx context.Context, t *target, opened *keyring.Opened,
	names []pki.Name) (map[pki.Name]pki.KeyPair, error) {
	self := t.self
	topo, err := s.Store.TopologyForVM(ctx, self.VMID)
	if err != nil {
		return nil, databaseError(err)
	}
	again, _ := findNode(topo.Nodes, self.VMID)
	ids, complete, err := keyring.OpenWindowIdentities(opened.DataKey, again, names)
	if err == nil && !complete {
		return nil, apperr.BootstrapChanged.New()
	}
	return ids, s.openError(ctx, t, err)
}

// windowIssuer signs a window identity: bootstrap-only ones live one
// window's length (never longer than any leaf), the others a leaf's life.
func (s *Service) windowIssuer(alg pki.Algorithm, name pki.Name) pki.Issuer {
	is := s.issuer(alg)
	if bootstrapOnly(name) && s.Window > 0 && s.Window < cmp.Or(is.LeafLifetime, pki.DefaultLeafLifetime) {
		is.LeafLifetime = s.Window
	}
	return is
}

// bootstrapOnly identities serve the bootstrap alone: those the cert table
// issues to the initial node only (the addons' system:masters).
func bootstrapOnly(name pki.Name) bool {
	spec, ok := pki.Lookup(name)
	return ok && spec.InitialOnly
}
