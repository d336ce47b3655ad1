package nodebootstrap

import (
	"context"
	"slices"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/pki"
)

// A renewal takes a certificate as the node's only if k8sapi recorded
// issuing it to that node: every certificate's serial is recorded at issue
// (store.RecordIssued and the statements that store identities). A
// certificate the cluster CA signed for the same name and usages but not
// for this node (a removed node's, when names could still come back) or
// minted with a stolen CA key renews nothing.
//
// Certificates issued before serials were recorded (migration 022) are
// taken while no serial is recorded for the node's identity: a cluster
// founded on the old schema keeps renewing, its first renewal records the
// new certificates, and from then on only those are taken.

// heldAsIssued refuses any of held whose certificate k8sapi did not record
// issuing to the node nodeID.
func (s *Service) heldAsIssued(ctx context.Context, nodeID int64, held []heldKey) error {
	recorded, err := s.Renewer.IssuedSerials(ctx, nodeID)
	if err != nil {
		return databaseError(err)
	}
	for _, k := range held {
		if err := issuedAs(recorded[string(k.name)], k); err != nil {
			return err
		}
	}
	return nil
}

// issuedAs refuses k's certificate unless its serial is among serials, or
// none is recorded (issued before serials were).
func issuedAs(serials []string, k heldKey) error {
	if len(serials) == 0 {
		return nil
	}
	if slices.Contains(serials, pki.PEMSerial([]byte(k.cert))) {
		return nil
	}
	return apperr.ProofOfPossessionFailed.Detail(string(k.name) + ": the certificate was not issued to this node by k8sapi")
}
