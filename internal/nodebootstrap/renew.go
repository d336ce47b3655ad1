package nodebootstrap

import (
	"context"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
)

// Renewer is the part of the store a renewal writes through.
type Renewer interface {
	RenewIdentities(ctx context.Context, r store.Renewal) (bool, error)
}

var _ Renewer = (*store.Store)(nil)

// Renewal is the answer of POST /bootstrap/control-plane/{vm_id}/renew: the
// node's PKI files and kubeconfigs, and which stored identities were
// re-issued (empty: the stored ones, byte for byte).
type Renewal struct {
	Credentials *bundle.Bundle
	Renewed     []pki.Name
}

// Renew gives a ready node its credentials again: each stored serving
// identity re-issued and re-sealed once less than Renewal.RenewBefore of
// its life is left, client identities fresh as on every fetch. CAs are
// never re-issued here (CA rotation is its own step; docs/).
func (s *Service) Renew(ctx context.Context, vm auth.BootstrapVM) (*Renewal, error) {
	topo, self, err := s.load(ctx, vm)
	if err != nil {
		return nil, err
	}
	if progress.Phase(self.Phase) != progress.Ready {
		return nil, apperr.New(apperr.Conflict, "node_not_ready",
			"the node is "+self.Phase+"; only a ready node renews its certificates")
	}
	c := &topo.Cluster
	opened, ids, err := s.open(ctx, c, self)
	if err != nil {
		return nil, err
	}
	renewed, err := s.reissueDue(ctx, vm, c, self, opened, ids)
	if err != nil {
		return nil, err
	}
	b, err := s.render(c, topo.Nodes, self, opened, ids)
	if err != nil {
		return nil, err
	}
	return &Renewal{Credentials: b.Credentials(), Renewed: renewed}, nil
}

// reissueDue re-issues the stored identities in ids that are due, replaces
// them in ids and stores them sealed, all or none (store.RenewIdentities).
func (s *Service) reissueDue(ctx context.Context, vm auth.BootstrapVM, c *store.Cluster, self store.Node,
	opened *keyring.Opened, ids map[pki.Name]pki.KeyPair) ([]pki.Name, error) {
	due, err := s.due(ids)
	if err != nil || len(due) == 0 {
		return nil, err
	}
	facts, err := keyring.NodeFacts(c, self)
	if err != nil {
		return nil, err
	}
	change := store.Renewal{VMID: vm.VMID, OrgID: vm.OrgID, Previous: map[string]string{}}
	for _, name := range due {
		kp, err := s.issuer(c).Issue(opened.Trust, name, facts)
		if err != nil {
			return nil, err
		}
		id, err := keyring.SealIdentity(opened.DataKey, vm.VMID, name, kp)
		if err != nil {
			return nil, err
		}
		change.Previous[string(name)] = string(ids[name].CertPEM)
		change.Replace = append(change.Replace, id)
		ids[name] = kp
	}
	return due, s.storeRenewal(ctx, change)
}

// due lists the stored identities whose remaining life is below the
// renewal window, in cert-table order.
func (s *Service) due(ids map[pki.Name]pki.KeyPair) ([]pki.Name, error) {
	var out []pki.Name
	for _, name := range pki.Names(pki.PhaseFounding) {
		isDue, err := s.Renewal.Due(ids[name].CertPEM, s.now())
		if err != nil {
			return nil, err
		}
		if isDue {
			out = append(out, name)
		}
	}
	return out, nil
}

func (s *Service) storeRenewal(ctx context.Context, change store.Renewal) error {
	wrote, err := s.Renewer.RenewIdentities(ctx, change)
	if err != nil {
		return databaseError(err)
	}
	if !wrote {
		// Another renewal of this node won the race, or the node stopped
		// being ready: what was read is no longer what is stored.
		return apperr.New(apperr.Conflict, "renewal_conflict",
			"the node's certificates changed while this renewal ran; renew again")
	}
	return nil
}

// RenewalResponse is the JSON body of a renewal: the bundle's shape, with
// the PKI files and kubeconfigs only, and the re-issued identities' names.
type RenewalResponse struct {
	bundle.Response
	Renewed []pki.Name `json:"renewed"`
}

// Response returns the renewal in its wire shape.
func (r *Renewal) Response() RenewalResponse {
	renewed := r.Renewed
	if renewed == nil {
		renewed = []pki.Name{}
	}
	return RenewalResponse{Response: r.Credentials.Response(), Renewed: renewed}
}
