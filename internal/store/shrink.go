package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Shrinking a control plane (docs/SCALE-CONTROL-PLANE.md, "Shrinking"):
// the scaling marks one member retiring, a member that stays removes it
// from etcd and reports it (GetBundleFunction records etcd_removed_at,
// migration 033), and only then does the reconciler delete the VM and
// the row, with the CRL that lists the member's etcd serials.

// liveScalingHeld fences a write of a shrink: the scaling $3 of cluster $1
// is live and held by owner $2.
const liveScalingHeld = `EXISTS (SELECT 1 FROM operations o WHERE o.id = $3 AND o.kube_cluster_id = $1
	AND o.kind = '` + KindControlPlaneScaling + `' AND o.lease_owner = $2 AND o.ended_at IS NULL)`

// RetireScalingMember marks control-plane node nodeID of the owner's
// scaling retiring (DNS, the snapshot node and the etcd member that does
// the removal are chosen among the others from now on); the scaling's
// changed_at is when it was marked (the removal's deadline counts from it).
func (s *Store) RetireScalingMember(ctx context.Context, clusterID int64, owner string, scalingID, nodeID int64) error {
	return s.fenced(ctx, "marking the leaving member retiring", `WITH op AS (
			UPDATE operations SET `+markChanged+` WHERE id = $3 AND kube_cluster_id = $1 AND lease_owner = $2 AND ended_at IS NULL
			RETURNING id
		)
		UPDATE kube_nodes SET retiring = true
		WHERE id = $4 AND kube_cluster_id = $1 AND role = '`+RoleControlPlane+`' AND EXISTS (SELECT 1 FROM op)`,
		clusterID, owner, scalingID, nodeID)
}

// RemoveScalingMember removes the row of the owner's scaling's leaving
// member once its etcd removal was reported (its VM is gone), with crl
// (nil: none to store) in the same transaction; its ordinal and name are
// never handed out again (kube_clusters.last_ordinal, node_certificates).
func (s *Store) RemoveScalingMember(ctx context.Context, clusterID int64, owner string, scalingID, nodeID int64, crl *NewEtcdCRL) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM kube_nodes WHERE id = $4 AND kube_cluster_id = $1 AND retiring
			AND etcd_removed_at IS NOT NULL AND `+liveScalingHeld, clusterID, owner, scalingID, nodeID)
		if err == nil && tag.RowsAffected() == 0 {
			err = ErrLeaseLost
		}
		if err == nil && crl != nil {
			err = storeEtcdCRL(ctx, tx, clusterID, crl)
		}
		if err != nil {
			return fmt.Errorf("removing the leaving member of scaling %d: %w", scalingID, err)
		}
		return nil
	})
}

// EtcdMembership is what a control-plane VM's membership route reads: its
// cluster, whether a scaling of it is live, and its control-plane nodes.
type EtcdMembership struct {
	ClusterID int64
	Scaling   bool
	Members   []EtcdMember
}

// EtcdMember is one control-plane node as the membership route sees it.
type EtcdMember struct {
	Ordinal   int
	VMID      int64
	Name      string
	Ready     bool
	Retiring  bool
	RemovedAt *time.Time
}

// EtcdMembershipOf is the membership of the active cluster of org's
// control-plane node whose VM is vmID, in one query: ErrNotFound for any
// other VM.
func (s *Store) EtcdMembershipOf(ctx context.Context, vmID, orgID int64) (EtcdMembership, error) {
	var m EtcdMembership
	var e EtcdMember
	rows, _ := s.pool.Query(ctx, `SELECT n.kube_cluster_id, EXISTS (SELECT 1 FROM operations o WHERE o.kube_cluster_id = n.kube_cluster_id
			AND o.kind = '`+KindControlPlaneScaling+`' AND o.ended_at IS NULL),
			n.ordinal, coalesce(n.vm_id, 0), n.node_name, n.ready_at IS NOT NULL, n.retiring, n.etcd_removed_at
		FROM kube_nodes n JOIN kube_clusters k ON k.id = n.kube_cluster_id
		WHERE n.kube_cluster_id = `+clusterOfVM(`'`+RoleControlPlane+`'`)+` AND n.role = '`+RoleControlPlane+`'
		  AND k.org_id = $2 AND k.status = 'active' ORDER BY n.ordinal`, vmID, orgID)
	_, err := pgx.ForEachRow(rows, []any{&m.ClusterID, &m.Scaling, &e.Ordinal, &e.VMID, &e.Name, &e.Ready, &e.Retiring, &e.RemovedAt},
		func() error {
			m.Members = append(m.Members, e)
			return nil
		})
	if err == nil && len(m.Members) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return m, fmt.Errorf("reading vm %d's etcd membership: %w", vmID, err)
	}
	return m, nil
}

// RecordEtcdRemoval records that VM reporter (a member that stays) removed
// the etcd member of cluster's retiring control-plane node name while a
// scaling of the cluster is live; a second report keeps the first.
// ErrNotFound: no such retiring node, or no scaling live.
func (s *Store) RecordEtcdRemoval(ctx context.Context, clusterID, reporter int64, name string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE kube_nodes SET etcd_removed_at = coalesce(etcd_removed_at, now()),
			etcd_removed_by = coalesce(etcd_removed_by, $3)
		WHERE kube_cluster_id = $1 AND node_name = $2 AND role = '`+RoleControlPlane+`' AND retiring
		  AND EXISTS (SELECT 1 FROM operations o WHERE o.kube_cluster_id = $1 AND o.kind = '`+KindControlPlaneScaling+`' AND o.ended_at IS NULL)`,
		clusterID, name, reporter)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("recording the etcd removal of %s: %w", name, err)
	}
	return nil
}
