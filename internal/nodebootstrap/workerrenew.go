package nodebootstrap

import (
	"context"
	"crypto/x509"
	"slices"
	"sort"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// A worker renews as a control-plane node does: one certificate request per
// identity, each signed with the key it already holds (pki.ProvePossession),
// re-issued over the same key with the names k8sapi recorded, never the
// request's. One difference: k8sapi keeps no copy of a worker's
// certificates (its keys were born on it and the CSR route answers them
// only), so the worker shows the certificate it proves, and k8sapi takes
// it as the worker's only if its cluster CA signed it for this node's row:
// the row's common name and usages, and k8sapi recorded issuing it to this
// node (issued.go). A key that is not the certificate's is refused; so is
// a certificate of another node, CA or row.

// WorkerRenewalRequest is the body of POST /bootstrap/worker/{vm_id}/renew:
// the control-plane renewal's requests by identity name, and the
// certificate each request proves.
type WorkerRenewalRequest struct {
	CSRs         map[string]string `json:"csrs"`
	Certificates map[string]string `json:"certificates"`
}

// workerRenewable are the identities a worker holds and renews.
var workerRenewable = []pki.Name{pki.KubeletClient, pki.KubeletServing}

// RenewWorker checks the worker's possession of each of its keys and
// re-issues the certificates less than Leaves.RenewBefore from their end,
// for a worker that finished its bootstrap in an active cluster.
func (s *WorkerService) RenewWorker(ctx context.Context, vm auth.BootstrapVM, req WorkerRenewalRequest) (*RenewalOutcome, error) {
	t, err := loadTarget(ctx, vm, s.Workers.WorkerForVM, "worker")
	if err != nil {
		return nil, err
	}
	// ReadyAt, not the phase: a failed renewal reports failed, and must
	// not lock the worker out of the next one.
	if t.self.ReadyAt == nil {
		return nil, apperr.NodeNotReady.Detail(
			"the worker is " + string(t.phase) + "; only a worker whose Node became Ready renews its certificates")
	}
	if err := checkWorkerRenewal(req); err != nil {
		return nil, err
	}
	held, err := s.heldWorkerKeys(t, req)
	if err != nil {
		return nil, err
	}
	if err := s.heldAsIssued(ctx, t.self.ID, held); err != nil {
		return nil, err
	}
	out, err := s.reissueWorker(ctx, t, held)
	if err != nil {
		return nil, err
	}
	return out, s.applyRotation(ctx, t, out, workerTrust)
}

// workerTrust is a worker's trust files: the cluster CA's.
func workerTrust(t *target) map[string]string {
	return bundle.WorkerTrust(keyring.TrustPEM(t.row, string(pki.ClusterCA)))
}

// checkWorkerRenewal says every problem with req's names at once: each
// renewable identity needs a request and a certificate, of bounded size.
func checkWorkerRenewal(req WorkerRenewalRequest) error {
	var errs []string
	for field, m := range map[string]map[string]string{"csrs": req.CSRs, "certificates": req.Certificates} {
		errs = append(errs, namesOf(field, m)...)
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return apperr.InvalidRequest.Detail(strings.Join(errs, "; "))
}

// namesOf is what is wrong with one of the request's maps.
func namesOf(field string, m map[string]string) []string {
	var errs []string
	for _, name := range workerRenewable {
		if _, ok := m[string(name)]; !ok {
			errs = append(errs, field+"."+string(name)+": is required")
		}
	}
	for name, v := range m {
		switch {
		case !slices.Contains(workerRenewable, pki.Name(name)):
			errs = append(errs, field+"."+name+": is no identity a worker renews")
		case len(v) > MaxCSRBytes:
			errs = append(errs, field+"."+name+": is over 8 KiB")
		}
	}
	return errs
}

// heldWorkerKeys holds each shown certificate to t's cluster CA and row,
// and each request to its certificate's key.
func (s *WorkerService) heldWorkerKeys(t *target, req WorkerRenewalRequest) ([]heldKey, error) {
	subject, err := t.cluster.CertSubject(t.node)
	if err != nil {
		return nil, err
	}
	cas, err := pki.ParseCerts(keyring.TrustPEM(t.row, string(pki.ClusterCA)))
	if err != nil {
		return nil, apperr.Internal.Wrap(err)
	}
	var out []heldKey
	for _, name := range workerRenewable {
		cert := req.Certificates[string(name)]
		if err := ownCertificate(cert, name, subject, cas); err != nil {
			return nil, err
		}
		k, err := proveOne(name, req.CSRs[string(name)], cert)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// ownCertificate refuses a certificate that is not the worker's name row
// from a generation of its cluster CA still trusted (cas; during a
// rotation, the old and the new): another CA's, another node's, another
// row's.
func ownCertificate(certPEM string, name pki.Name, subject pki.Subject, cas []*x509.Certificate) error {
	cert, err := pki.ParseCert([]byte(certPEM))
	if err != nil {
		return apperr.InvalidRequest.Detail("certificates." + string(name) + ": " + err.Error())
	}
	spec, _ := pki.Lookup(name) // workerRenewable names the table's rows
	switch {
	case !signedByOne(cert, cas):
		return notOwn(name, "is not signed by this cluster's CA")
	case cert.Subject.CommonName != spec.CommonName(subject):
		return notOwn(name, "is not this node's (common name "+cert.Subject.CommonName+")")
	case !slices.Equal(cert.ExtKeyUsage, spec.Usages):
		return notOwn(name, "is not a "+string(name)+" certificate")
	}
	return nil
}

// signedByOne says whether one of cas signed cert.
func signedByOne(cert *x509.Certificate, cas []*x509.Certificate) bool {
	return slices.ContainsFunc(cas, func(ca *x509.Certificate) bool { return cert.CheckSignatureFrom(ca) == nil })
}

func notOwn(name pki.Name, why string) error {
	return apperr.ProofOfPossessionFailed.Detail("certificates." + string(name) + ": " + why)
}

// reissueWorker re-issues the due certificates from the cluster CA alone
// (a worker is issued nothing else) and answers all of them. Only their
// serials are stored: k8sapi keeps no copy of a worker's certificates.
func (s *WorkerService) reissueWorker(ctx context.Context, t *target, held []heldKey) (*RenewalOutcome, error) {
	due, err := s.due(held, rotating(t) != nil)
	out := &RenewalOutcome{Certificates: certsOf(held)}
	if err != nil || len(due) == 0 {
		return out, err
	}
	trust, err := keyring.OpenCA(ctx, s.Envelope, t.row, pki.ClusterCA)
	if err != nil {
		return nil, s.openError(ctx, t, err)
	}
	sign := &signer{issuer: s.issuer(t.cluster.Algorithm), trust: trust}
	if sign.subject, err = t.cluster.CertSubject(t.node); err != nil {
		return nil, err
	}
	var issued []store.Identity
	for _, k := range due {
		id, err := sign.reissue(k)
		if err != nil {
			return nil, err
		}
		issued = append(issued, id)
		out.Certificates[k.name], out.Renewed = id.Cert, append(out.Renewed, k.name)
	}
	// Recorded before answered: a certificate k8sapi did not record would
	// not renew again.
	if err := s.Renewer.RecordIssued(ctx, t.self.VMID, issued); err != nil {
		return nil, databaseError(err)
	}
	return out, nil
}
