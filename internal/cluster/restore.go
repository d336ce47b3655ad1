package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// A cluster founded from a snapshot (restore_from; docs/ETCD-SNAPSHOTS.md,
// "Restore") is founded as any other, but its trust is the snapshot's
// cluster's: the snapshot's certificates, ServiceAccount tokens and
// Secrets are only good under those keys. The keys are opened from the
// old cluster's row and sealed again under the new cluster's own data key
// (begin): copies, so deleting the old cluster leaves the new one whole.
// The etcd CA alone is made anew (pki.Issuer.RestoredTrust): it signed
// nothing in the snapshot, and sharing it let the old cluster's API
// servers reach the restored etcd.

// inheritance is what a restored founding takes from its snapshot.
type inheritance struct {
	trust    *pki.Trust
	snapshot store.EtcdSnapshot
}

// restoreMatch is one thing the new cluster must share with the snapshot's
// cluster: the field the operator would change, and the two values.
type restoreMatch struct {
	field, old, new string
}

// restoreMatches is the one table of what must match: the snapshot holds
// objects that name them (Services' cluster IPs, Pods' CIDRs and DNS
// names, the CNI's objects, the API server's storage versions), and the
// inherited CAs keep their key algorithm (docs/ETCD-SNAPSHOTS.md says
// which row is why).
func (s *Service) restoreMatches(old *store.Cluster, spec clusterspec.Spec) []restoreMatch {
	return []restoreMatch{
		{"kubernetes_version", old.KubernetesVersion, s.versionOf(spec)},
		{"service_cidr", old.ServiceCIDR, s.Settings.ServiceCIDR},
		{"pod_cidr", old.PodCIDR, s.Settings.PodCIDR},
		{"cluster_domain", old.ClusterDomain, s.Settings.ClusterDomain},
		{"cni", old.CNI, string(spec.CNI)},
		{"key_algorithm", old.KeyAlgorithm, string(spec.KeyAlgorithm)},
	}
}

// checkMatches is the first mismatch as a 409 naming its field.
func checkMatches(matches []restoreMatch) error {
	for _, m := range matches {
		if m.old != m.new {
			return apperr.RestoreIncompatible.Detail(m.field + ": \"" + m.old + "\" in the snapshot's cluster, \"" + m.new + "\" in the new one; they must match")
		}
	}
	return nil
}

// inherit reads and checks the snapshot spec restores from, and opens its
// cluster's trust; nil when spec restores nothing. Reads only: nothing is
// written for a refusal. Another org's snapshot is 404, as a missing one.
func (s *Service) inherit(ctx context.Context, org int64, spec clusterspec.Spec) (*inheritance, error) {
	ref := spec.RestoreFrom
	if ref == nil {
		return nil, nil
	}
	snap, err := s.Store.EtcdSnapshot(ctx, org, ref.ClusterID, ref.SnapshotID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound.Detail("restore_from: no such snapshot of that cluster")
	}
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	if snap.State != store.SnapshotUploaded {
		return nil, apperr.SnapshotNotRestorable.Detail("restore_from.snapshot_id: the snapshot is " + snap.State + ", not uploaded")
	}
	old, err := s.Store.Cluster(ctx, org, ref.ClusterID)
	if err != nil {
		return nil, usecase.DatabaseError(err) // the snapshot's join found it a moment ago
	}
	if err := s.checkInheritable(&old, spec); err != nil {
		return nil, err
	}
	opened, err := keyring.Open(ctx, s.Envelope, &old)
	if err != nil {
		return nil, s.TrustError(ctx, &old, err)
	}
	return &inheritance{trust: opened.Trust, snapshot: snap}, nil
}

// checkInheritable: the old cluster still holds its keys (a failed or
// deleted cluster's are shredded) and the new one matches it.
func (s *Service) checkInheritable(old *store.Cluster, spec clusterspec.Spec) error {
	if len(old.WrappedDataKey) == 0 || old.SecretsEncryptionKeySealed == nil {
		return apperr.SnapshotNotRestorable.Detail("restore_from.cluster_id: the cluster is " + old.Status + " and its keys are gone")
	}
	return checkMatches(s.restoreMatches(old, spec))
}

// trustOf is the trust a founding seals: the inherited one (with the CAs
// a restore makes anew), or new keys.
func (s *Service) trustOf(spec clusterspec.Spec, in *inheritance) (*pki.Trust, error) {
	is := s.Issuer(spec.KeyAlgorithm)
	newTrust := is.NewTrust
	if in != nil {
		newTrust = func() (*pki.Trust, error) { return is.RestoredTrust(in.trust) }
	}
	trust, err := newTrust()
	if err != nil {
		return nil, fmt.Errorf("creating cluster trust: %w", err)
	}
	return trust, nil
}

// recordRestore copies the snapshot's key, size and digest onto c: what
// its nodes restore from, whatever becomes of the old cluster's rows.
func recordRestore(c *store.Cluster, in *inheritance) {
	if in == nil {
		return
	}
	snap := in.snapshot
	key := snap.ObjectKey
	c.RestoredFromSnapshotID, c.RestoreObjectKey, c.RestoreSizeBytes, c.RestoreSHA256 = &snap.ID, &key, snap.SizeBytes, snap.SHA256
}
