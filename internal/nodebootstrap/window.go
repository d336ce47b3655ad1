package nodebootstrap

import (
	"cmp"
	"context"

	"github.com/excloud/k8sapi/internal/apperr"
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

// windowIdentities opens t's node's identities of its current window,
// issuing them on the window's first fetch.
func (s *Service) windowIdentities(ctx context.Context, t *target, opened *keyring.Opened,
	initial bool) (map[pki.Name]pki.KeyPair, error) {
	names := pki.IssuedTo(pki.PhaseFetch, initial)
	ids, complete, err := keyring.OpenWindowIdentities(opened.DataKey, t.self, names)
	if err != nil || complete {
		return ids, s.openError(ctx, t, err)
	}
	return s.issueWindow(ctx, t, opened, names, initial)
}

// issueWindow issues and stores t's node's identities for its current
// window. When another fetch stored the window's first, those are served
// instead.
func (s *Service) issueWindow(ctx context.Context, t *target, opened *keyring.Opened,
	names []pki.Name, initial bool) (map[pki.Name]pki.KeyPair, error) {
	subject, err := t.cluster.CertSubject(t.node)
	if err != nil {
		return nil, err
	}
	subject.Initial = initial
	issued := map[pki.Name]pki.KeyPair{}
	for _, name := range names {
		if issued[name], err = s.windowIssuer(t.cluster.Algorithm, name).Issue(opened.Trust, name, subject); err != nil {
			return nil, err
		}
	}
	self := t.self
	sealed, err := keyring.SealWindowIdentities(opened.DataKey, self, names, issued, bootstrapOnly)
	if err != nil {
		return nil, err
	}
	wrote, err := s.Store.StoreWindowIdentities(ctx, store.WindowIdentities{VMID: self.VMID, OpenedAt: self.BootstrapOpenedAt, Issued: sealed})
	if err != nil || wrote {
		return issued, dbError(err)
	}
	return s.storedWindow(ctx, t, opened, names)
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

func dbError(err error) error {
	if err == nil {
		return nil
	}
	return databaseError(err)
}
