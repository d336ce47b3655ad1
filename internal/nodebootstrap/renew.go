package nodebootstrap

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// Renewal is proof of possession, and certificates only. The node signs a
// certificate request with each key it holds (exk8s-renew-certificates.sh);
// k8sapi checks that each request's key is the one in the certificate it
// issued, re-issues the due ones over the same keys with the same names
// and addresses (the cert table's, never the request's), and answers
// certificates. Never a private key, the service-account signer, or the
// bootstrap-only admin identity: the VM's proofs alone (what a pod with
// host networking could obtain) renew nothing. Keys that must change (the
// signer, a CA) are rotation, not renewal.

// Renewer is the part of the store a renewal writes through.
type Renewer interface {
	RenewIdentities(ctx context.Context, r store.CertReplacement) (bool, error)
	RecordIssued(ctx context.Context, vmID int64, issued []store.Identity) error
	IssuedSerials(ctx context.Context, nodeID int64) (map[string][]string, error)
	RecordCAPhase(ctx context.Context, vmID int64, r store.Rotation) error
}

var _ Renewer = (*store.Store)(nil)

// MaxCSRBytes bounds one certificate request: a P-256 or RSA-2048 request
// is well under 2 KiB.
const MaxCSRBytes = 8 << 10

// RenewalRequest is the body of POST /bootstrap/control-plane/{vm_id}/renew:
// one PEM certificate request per identity the node renews (pki.Renewable),
// by name, each signed with that identity's current key.
type RenewalRequest struct {
	CSRs map[string]string `json:"csrs"`
}

// RenewalOutcome is the answer: every renewable identity's current certificate
// (re-issued or not), and which were re-issued.
type RenewalOutcome struct {
	Certificates map[pki.Name]string
	Renewed      []pki.Name
	// Trust are the node's trust files by path, answered during a CA
	// rotation (bundle.ControlPlaneTrust, bundle.WorkerTrust); nil outside.
	Trust map[string]string
}

// Renew checks the node's possession of each of its keys and re-issues the
// certificates less than Leaves.RenewBefore from their end. Every renewal
// past the proofs is recorded, answered or refused.
func (s *Service) Renew(ctx context.Context, vm auth.BootstrapVM, req RenewalRequest) (*RenewalOutcome, error) {
	out, err := s.renew(ctx, vm, req)
	outcome := store.RenewalServed
	if err != nil {
		outcome = store.RenewalRefused
	}
	if rerr := s.record(ctx, vm, outcome, s.now()); rerr != nil && err == nil {
		return nil, databaseError(rerr) // a renewal that cannot be recorded is not answered
	}
	return out, err
}

func (s *Service) renew(ctx context.Context, vm auth.BootstrapVM, req RenewalRequest) (*RenewalOutcome, error) {
	t, err := s.load(ctx, vm)
	if err != nil {
		return nil, err
	}
	if t.self.ReadyAt == nil {
		return nil, apperr.NodeNotReady.Detail(
			"the node is " + string(t.phase) + "; only a node that finished its bootstrap renews its certificates")
	}
	held, err := heldKeys(t.self, req)
	if err != nil {
		return nil, err
	}
	if err := s.heldAsIssued(ctx, t.self.ID, held); err != nil {
		return nil, err
	}
	out, err := s.reissueDue(ctx, vm, t, held)
	if err != nil {
		return nil, err
	}
	return out, s.applyRotation(ctx, t, out, controlPlaneTrust)
}

// rotating is t's cluster's rotation when it asks t's node for its phase
// (live, and not applied by the node at its epoch): every certificate is
// due then, and the answer carries the trust files.
func rotating(t *target) *store.Rotation {
	r := t.row.CARotation
	if !r.Moving() || r.AppliedBy(t.self.CAPhase) {
		return nil
	}
	return r
}

// applyRotation puts t's trust files (trust's) in out and records the
// rotation's phase as applied by t's node, when a rotation asks for it:
// answered only if recorded, so a node never holds a phase k8sapi does
// not know it holds. A phase that moved meanwhile records nothing, and
// the node is due again at its next renewal.
func (s *Service) applyRotation(ctx context.Context, t *target, out *RenewalOutcome, trust func(*target) map[string]string) error {
	r := rotating(t)
	if r == nil {
		return nil
	}
	out.Trust = trust(t)
	if err := s.Renewer.RecordCAPhase(ctx, t.self.VMID, *r); err != nil {
		return databaseError(err)
	}
	return nil
}

// controlPlaneTrust is a control-plane node's trust files; the signer's
// current key only in the phases whose current generation is not the
// one the node signs with (signing, and an abort's step back) of a
// rotation that rotates it; the cluster's etcd CRL once it has one, in a
// rotation of the etcd CA (which signs it again with each new signer).
func controlPlaneTrust(t *target) map[string]string {
	var signer []byte
	r := t.row.CARotation
	if r.Rotates(store.RootServiceAccount) && (r.Phase == store.PhaseSigning || r.Phase == store.PhaseUntrusting) {
		signer = t.signerKey // opened by the re-issue: everything is due
	}
	var crl []byte
	if t.crl.Number > 0 && r.Rotates(string(pki.EtcdCA)) { // else etcd would restart for a file it already has installed
		crl = []byte(t.crl.PEM)
	}
	return bundle.ControlPlaneTrust(keyring.CACerts(t.row), keyring.ServiceAccountPub(t.row), signer, crl)
}

// heldKey is one identity whose key the node proved it holds.
type heldKey struct {
	name pki.Name
	cert string // the stored certificate
	pub  any    // its public key, which the request was signed with
}

// heldKeys checks req against self's stored identities: exactly the
// renewable names the node renews, each request signed with its
// certificate's key.
func heldKeys(self store.Node, req RenewalRequest) ([]heldKey, error) {
	stored := map[string]string{}
	for _, id := range self.Identities {
		stored[id.Name] = id.Cert
	}
	names := renewedBy(stored, req)
	if err := checkNames(req, names); err != nil {
		return nil, err
	}
	var out []heldKey
	for _, name := range names {
		k, err := proveOne(name, req.CSRs[string(name)], stored[string(name)])
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// renewedBy is the renewable identities a node renews: all of them but
// one the cert table gained after the node's bootstrap, which k8sapi holds
// no certificate of and the node's renewal script does not name (its
// bundle came before the row); its next bootstrap issues it. A node that
// names one k8sapi has no copy of is still told so (identity_not_stored).
// A retired identity is renewed only when asked: a node bootstrapped
// before its retirement names it, a later one holds none (though k8sapi
// may keep the row of an earlier window).
func renewedBy(stored map[string]string, req RenewalRequest) []pki.Name {
	var out []pki.Name
	for _, name := range pki.Renewable() {
		if _, asked := req.CSRs[string(name)]; asked || stored[string(name)] != "" {
			out = append(out, name)
		}
	}
	for _, name := range pki.Names(pki.PhaseRetired) {
		if _, asked := req.CSRs[string(name)]; asked {
			out = append(out, name)
		}
	}
	return out
}

// checkNames says every problem with req's names at once: missing (of
// names), unknown or oversized requests.
func checkNames(req RenewalRequest, names []pki.Name) error {
	var errs []string
	for _, name := range names {
		if _, ok := req.CSRs[string(name)]; !ok {
			errs = append(errs, "csrs."+string(name)+": is required")
		}
	}
	for name, csr := range req.CSRs {
		switch {
		case !slices.Contains(renewableNames(), pki.Name(name)):
			errs = append(errs, "csrs."+name+": is no identity this node renews")
		case len(csr) > MaxCSRBytes:
			errs = append(errs, "csrs."+name+": is over 8 KiB")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return apperr.InvalidRequest.Detail(strings.Join(errs, "; "))
}

// renewableNames is every identity a renewal may name: those nodes are
// issued and renew, and the retired ones older nodes still hold.
func renewableNames() []pki.Name {
	return append(pki.Renewable(), pki.Names(pki.PhaseRetired)...)
}

func proveOne(name pki.Name, csr, cert string) (heldKey, error) {
	if cert == "" {
		// Stored identities predate the window: the node's bundle was
		// fetched before they were kept. A re-open issues them.
		return heldKey{}, apperr.IdentityNotStored.Detail(
			"k8sapi holds no certificate of " + string(name) + " for this node; an operator may re-open its bootstrap")
	}
	pub, err := pki.ProvePossession([]byte(csr), []byte(cert))
	switch {
	case errors.Is(err, pki.ErrNotPossessed):
		return heldKey{}, apperr.ProofOfPossessionFailed.Detail(
			"csrs." + string(name) + ": is not signed with the key of the node's " + string(name) + " certificate")
	case err != nil:
		return heldKey{}, apperr.InvalidRequest.Detail("csrs." + string(name) + ": " + err.Error())
	}
	return heldKey{name: name, cert: cert, pub: pub}, nil
}

// reissueDue re-issues the due certificates over the held keys and stores
// them, all or none (store.RenewIdentities).
func (s *Service) reissueDue(ctx context.Context, vm auth.BootstrapVM, t *target, held []heldKey) (*RenewalOutcome, error) {
	out := &RenewalOutcome{}
	change := store.CertReplacement{VMID: vm.VMID, OrgID: vm.OrgID, Previous: map[string]string{}}
	due, err := s.due(held, rotating(t) != nil)
	if err != nil || len(due) == 0 {
		out.Certificates = certsOf(held)
		return out, err
	}
	sign, err := s.signer(ctx, t)
	if err != nil {
		return nil, err
	}
	t.signerKey = sign.signerKey
	out.Certificates = certsOf(held)
	for _, k := range due {
		id, err := sign.reissue(k)
		if err != nil {
			return nil, err
		}
		change.Previous[string(k.name)] = k.cert
		change.Replace = append(change.Replace, id)
		out.Certificates[k.name], out.Renewed = id.Cert, append(out.Renewed, k.name)
	}
	if len(change.Replace) == 0 {
		return out, nil
	}
	return out, s.storeRenewal(ctx, change)
}

// due lists the held keys whose certificates have less than RenewBefore
// left: all of them when a rotation asks (every leaf is signed by its
// root's current generation again).
func (s *Service) due(held []heldKey, all bool) ([]heldKey, error) {
	if all {
		return held, nil
	}
	var out []heldKey
	for _, k := range held {
		isDue, err := s.Leaves.Due([]byte(k.cert), s.now())
		if err != nil {
			return nil, err
		}
		if isDue {
			out = append(out, k)
		}
	}
	return out, nil
}

func certsOf(held []heldKey) map[pki.Name]string {
	out := map[pki.Name]string{}
	for _, k := range held {
		out[k.name] = k.cert
	}
	return out
}

// signer re-issues one node's certificates from its cluster's CAs.
type signer struct {
	issuer  pki.Issuer
	trust   *pki.Trust
	subject pki.Subject
	// signerKey is the service-account signer's current key (PEM), opened
	// with the CAs.
	signerKey []byte
}

// signer opens t's CAs (one KMS call, or none when warm): only a renewal
// with something due needs them.
func (s *Service) signer(ctx context.Context, t *target) (*signer, error) {
	opened, err := keyring.Open(ctx, s.Envelope, t.row)
	if err != nil {
		return nil, s.openError(ctx, t, err)
	}
	subject, err := t.cluster.CertSubject(t.node)
	if err != nil {
		return nil, err
	}
	return &signer{issuer: s.issuer(t.cluster.Algorithm), trust: opened.Trust, subject: subject, signerKey: opened.ServiceAccountKey}, nil
}

func (g *signer) reissue(k heldKey) (store.Identity, error) {
	certPEM, err := g.issuer.Reissue(g.trust, k.name, g.subject, k.pub)
	if err != nil {
		return store.Identity{}, err
	}
	notAfter, err := pki.NotAfter(certPEM)
	return store.Identity{Name: string(k.name), Cert: string(certPEM), NotAfter: notAfter}, err
}

func (s *Service) storeRenewal(ctx context.Context, change store.CertReplacement) error {
	wrote, err := s.Renewer.RenewIdentities(ctx, change)
	if err != nil {
		return databaseError(err)
	}
	if !wrote {
		// Another renewal of this node won the race, or its bootstrap was
		// re-opened: what was read is no longer what is stored.
		return apperr.RenewalConflict.New()
	}
	return nil
}

// RenewalResponse is the JSON body of a renewal.
type RenewalResponse struct {
	Certificates map[pki.Name]string `json:"certificates"`
	Renewed      []pki.Name          `json:"renewed"`
	// NotAfter is the earliest end among the answered certificates.
	NotAfter time.Time `json:"not_after"`
	// Trust are the node's trust files by path during a CA rotation (each
	// a bundle of its root's trusted generations); absent outside one.
	Trust map[string]string `json:"trust,omitempty"`
}

// Response returns the renewal in its wire shape.
func (r *RenewalOutcome) Response() RenewalResponse {
	out := RenewalResponse{Certificates: r.Certificates, Renewed: r.Renewed, Trust: r.Trust}
	if out.Renewed == nil {
		out.Renewed = []pki.Name{}
	}
	for _, c := range r.Certificates {
		if end, err := pki.NotAfter([]byte(c)); err == nil && (out.NotAfter.IsZero() || end.Before(out.NotAfter)) {
			out.NotAfter = end
		}
	}
	return out
}
