package nodebootstrap

import (
	"context"
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// The etcd CRL a control-plane node's etcd reads (issue 43, item 2;
// docs/REPLACE-NODE.md): every bundle carries the cluster's current one,
// and GET /bootstrap/control-plane/{vm_id}/etcd-crl serves it to the
// node's timer, which installs a newer one within a minute. The route
// opens no key: the reconciler signs a CRL when it retires a node.

// CRLs reads a cluster's current etcd CRL for one of its control-plane VMs.
type CRLs interface {
	EtcdCRLForVM(ctx context.Context, vmID, orgID int64) (store.EtcdCRL, error)
}

var _ CRLs = (*store.Store)(nil)

// EtcdCRL is the route's answer: the cluster's current CRL, PEM, and its
// number (a node installs only a higher number than it has).
type EtcdCRL struct {
	ClusterID int64  `json:"cluster_id"`
	Number    int64  `json:"number"`
	CRL       string `json:"crl"`
}

// EtcdCRL is vm's cluster's current etcd CRL; nil while it has revoked
// nothing (the node keeps the empty one its bundle carried).
func (s *Service) EtcdCRL(ctx context.Context, vm auth.BootstrapVM) (*EtcdCRL, error) {
	c, err := s.CRLs.EtcdCRLForVM(ctx, vm.VMID, vm.OrgID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, notFound("control-plane node of an active cluster")
	case err != nil:
		return nil, databaseError(err)
	case c.Number == 0:
		return nil, nil
	}
	return &EtcdCRL{ClusterID: c.ClusterID, Number: c.Number, CRL: c.PEM}, nil
}

// bundleCRL is the CRL t's bundle carries: the cluster's current one, or
// while it has revoked nothing an empty one of number 0 signed now with
// the etcd CA the fetch opened anyway, since etcd refuses every handshake
// while its CRL file is missing.
func bundleCRL(t *target, opened *keyring.Opened, now time.Time) ([]byte, error) {
	if t.crl.Number > 0 {
		return []byte(t.crl.PEM), nil
	}
	ca := opened.Trust.CAs[pki.EtcdCA]
	if ca == nil {
		return nil, apperr.Internal.Detail("the cluster's etcd CA did not open")
	}
	return pki.SignCRL(ca, 0, nil, now)
}
