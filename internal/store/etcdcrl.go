package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The etcd CRL's rows (migration 032): what each node was given by the
// etcd CA (recorded by a trigger), the serials revoked, and the cluster's
// current signed CRL.

// ErrCRLStale means a CRL of the same or a higher number was stored since
// the one being stored was made from what was read: make it again.
var ErrCRLStale = errors.New("the cluster's etcd CRL changed since it was read")

// EtcdCRL is a cluster's current etcd CRL: Number 0 and no PEM when it has
// revoked nothing yet.
type EtcdCRL struct {
	ClusterID int64
	Number    int64
	PEM       string
}

// EtcdRevocation is one serial on a cluster's CRL.
type EtcdRevocation struct {
	Serial    string // lower-case hex
	NodeName  string
	NotAfter  time.Time
	RevokedAt time.Time
}

// RevocationBase is what a node's retirement makes its CRL from: the
// cluster's current CRL number, the revocations still listed (their
// certificates unexpired at the time asked), and the etcd-CA certificates
// (PEM) ever recorded for the node.
type RevocationBase struct {
	Number int64
	Listed []EtcdRevocation
	Held   []string
}

// EtcdRevocationBase reads node nodeID's etcd-CA certificates and cluster
// clusterID's revocations unexpired at now, in one round trip.
func (s *Store) EtcdRevocationBase(ctx context.Context, clusterID, nodeID int64, now time.Time) (RevocationBase, error) {
	var out RevocationBase
	var numErr, listErr, heldErr error
	b := &pgx.Batch{}
	b.Queue(`SELECT coalesce(max(number), 0) FROM etcd_crls WHERE kube_cluster_id = $1`, clusterID).QueryRow(func(row pgx.Row) error {
		numErr = row.Scan(&out.Number)
		return nil
	})
	b.Queue(`SELECT serial, node_name, not_after, revoked_at FROM etcd_revocations
		WHERE kube_cluster_id = $1 AND not_after > $2 ORDER BY revoked_at, serial`, clusterID, now).Query(func(rows pgx.Rows) error {
		out.Listed, listErr = pgx.CollectRows(rows, func(r pgx.CollectableRow) (EtcdRevocation, error) {
			var e EtcdRevocation
			err := r.Scan(&e.Serial, &e.NodeName, &e.NotAfter, &e.RevokedAt)
			return e, err
		})
		return nil
	})
	b.Queue(`SELECT cert FROM etcd_ca_certificates WHERE kube_cluster_id = $1 AND node_id = $2 ORDER BY recorded_at, name`,
		clusterID, nodeID).Query(func(rows pgx.Rows) error {
		out.Held, heldErr = pgx.CollectRows(rows, pgx.RowTo[string])
		return nil
	})
	err := s.pool.SendBatch(ctx, b).Close()
	if err = errors.Join(err, numErr, listErr, heldErr); err != nil {
		return RevocationBase{}, fmt.Errorf("reading the etcd revocations of cluster %d: %w", clusterID, err)
	}
	return out, nil
}

// NewEtcdCRL is a CRL signed to be stored with a node's retirement: its
// number (one past the one read), its PEM, when it was signed and the
// revocations it adds.
type NewEtcdCRL struct {
	Number   int64
	PEM      string
	SignedAt time.Time
	Add      []EtcdRevocation
}

// storeEtcdCRL writes crl in tx: its revocations, the expired ones
// dropped, and the CRL itself over a lower number only (ErrCRLStale
// otherwise), so a node's removal and the CRL that lists it commit
// together or not at all.
func storeEtcdCRL(ctx context.Context, tx pgx.Tx, clusterID int64, crl *NewEtcdCRL) error {
	serials, names, ends, ats := make([]string, len(crl.Add)), make([]string, len(crl.Add)), make([]time.Time, len(crl.Add)), make([]time.Time, len(crl.Add))
	for i, r := range crl.Add {
		serials[i], names[i], ends[i], ats[i] = r.Serial, r.NodeName, r.NotAfter, r.RevokedAt
	}
	if _, err := tx.Exec(ctx, `INSERT INTO etcd_revocations (kube_cluster_id, serial, node_name, not_after, revoked_at)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) ON CONFLICT DO NOTHING`,
		clusterID, serials, names, ends, ats); err != nil {
		return fmt.Errorf("recording etcd revocations: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM etcd_revocations WHERE kube_cluster_id = $1 AND not_after <= $2`, clusterID, crl.SignedAt); err != nil {
		return fmt.Errorf("dropping expired etcd revocations: %w", err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO etcd_crls (kube_cluster_id, number, crl_pem, signed_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kube_cluster_id) DO UPDATE SET number = EXCLUDED.number, crl_pem = EXCLUDED.crl_pem, signed_at = EXCLUDED.signed_at
		WHERE etcd_crls.number < EXCLUDED.number`, clusterID, crl.Number, crl.PEM, crl.SignedAt)
	if err != nil {
		return fmt.Errorf("storing the etcd CRL: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrCRLStale
	}
	return nil
}

// etcdCRLQuery is the current CRL of the cluster of control-plane VM $1
// (none: number 0), for the bundle's batch and the CRL route.
const etcdCRLQuery = `SELECT n.kube_cluster_id, coalesce(c.number, 0), coalesce(c.crl_pem, '')
	FROM kube_nodes n LEFT JOIN etcd_crls c ON c.kube_cluster_id = n.kube_cluster_id
	WHERE n.vm_id = $1 AND n.role = '` + RoleControlPlane + `'`

func scanEtcdCRL(row pgx.Row) (EtcdCRL, error) {
	var c EtcdCRL
	err := row.Scan(&c.ClusterID, &c.Number, &c.PEM)
	return c, err
}

// EtcdCRLForVM is the current etcd CRL of the active cluster of org's
// control-plane node whose VM is vmID: ErrNotFound for any other VM.
func (s *Store) EtcdCRLForVM(ctx context.Context, vmID, orgID int64) (EtcdCRL, error) {
	c, err := scanEtcdCRL(s.pool.QueryRow(ctx, etcdCRLQuery+` AND n.kube_cluster_id IN
		(SELECT id FROM kube_clusters WHERE org_id = $2 AND status = 'active')`, vmID, orgID))
	if err != nil {
		return EtcdCRL{}, fmt.Errorf("reading vm %d's etcd CRL: %w", vmID, notFound(err))
	}
	return c, nil
}
