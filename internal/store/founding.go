package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// FoundingTx is the transaction of one POST /clusters: the cluster row and
// its node rows commit together or not at all.
type FoundingTx struct {
	tx pgx.Tx
}

// BeginFounding opens the founding transaction.
func (s *Store) BeginFounding(ctx context.Context) (*FoundingTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("beginning founding transaction: %w", err)
	}
	return &FoundingTx{tx: tx}, nil
}

// ReserveClusterID takes the next cluster id, so keys can be sealed under
// their cluster's id before the row exists.
func (f *FoundingTx) ReserveClusterID(ctx context.Context) (int64, error) {
	var id int64
	if err := f.tx.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('kube_clusters', 'id'))`).Scan(&id); err != nil {
		return 0, fmt.Errorf("reserving cluster id: %w", err)
	}
	return id, nil
}

// InsertCluster writes the cluster row. A committed cluster with the same
// (org, idempotency key) gives ErrDuplicate; a concurrent uncommitted one
// makes this wait for it (the unique index serializes retries).
func (f *FoundingTx) InsertCluster(ctx context.Context, c Cluster) error {
	_, err := f.tx.Exec(ctx, `INSERT INTO kube_clusters (id, org_id, project_id, name, control_plane_dns_name,
		status, key_algorithm, kubernetes_version, cluster_domain, service_cidr, pod_cidr, control_plane_count,
		security_group_ids, kms_key_id, wrapped_data_key, ca_cert, ca_key_sealed, etcd_ca_cert, etcd_ca_key_sealed,
		front_proxy_ca_cert, front_proxy_ca_key_sealed, service_account_pub, service_account_key_sealed,
		idempotency_key, request_fingerprint)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25)`,
		c.ID, c.OrgID, c.ProjectID, c.Name, c.ControlPlaneDNSName, c.Status, c.KeyAlgorithm, c.KubernetesVersion,
		c.ClusterDomain, c.ServiceCIDR, c.PodCIDR, c.ControlPlaneCount, c.SecurityGroupIDs, c.KMSKeyID,
		c.WrappedDataKey, c.CACert, c.CAKeySealed, c.EtcdCACert, c.EtcdCAKeySealed, c.FrontProxyCACert,
		c.FrontProxyCAKeySealed, c.ServiceAccountPub, c.ServiceAccountKeySealed, c.IdempotencyKey, c.RequestFingerprint)
	if isUniqueViolation(err) {
		return fmt.Errorf("inserting cluster: %w", ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("inserting cluster: %w", err)
	}
	return nil
}

// SetSecurityGroups records the security groups the VMs were created in and
// the one founding created itself, if any.
func (f *FoundingTx) SetSecurityGroups(ctx context.Context, clusterID int64, ids []int64, created *int64) error {
	if _, err := f.tx.Exec(ctx, `UPDATE kube_clusters SET security_group_ids = $2, created_security_group_id = $3
		WHERE id = $1`, clusterID, ids, created); err != nil {
		return fmt.Errorf("recording security groups: %w", err)
	}
	return nil
}

// VMAddress is a VM's name and current addresses from the platform tables.
type VMAddress struct {
	VMID       int64
	Name       string
	IPv4, IPv6 string
	PublicIPv4 string
}

// VMAddresses reads back the current addresses of vmIDs (one round trip).
// Reading the platform's rows, not trusting the create response, is the
// seed's rule: the database is the truth about what the VM got.
func (f *FoundingTx) VMAddresses(ctx context.Context, vmIDs []int64) (map[int64]VMAddress, error) {
	rows, _ := f.tx.Query(ctx, `
		SELECT v.id, v.name, coalesce(i.ipv4, ''), coalesce(i.ipv6, ''), coalesce(i.public_ipv4, '')
		FROM vms v
		LEFT JOIN LATERAL (SELECT ipv4, ipv6, public_ipv4 FROM interfaces
			WHERE vm_id = v.id ORDER BY is_primary DESC, id LIMIT 1) i ON true
		WHERE v.id = ANY($1) AND v.deleted_at IS NULL`, vmIDs)
	addrs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VMAddress, error) {
		var a VMAddress
		err := r.Scan(&a.VMID, &a.Name, &a.IPv4, &a.IPv6, &a.PublicIPv4)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading vm addresses: %w", err)
	}
	out := make(map[int64]VMAddress, len(addrs))
	for _, a := range addrs {
		out[a.VMID] = a
	}
	return out, nil
}

// InsertNode writes one control-plane node and its stored identities in
// one statement.
func (f *FoundingTx) InsertNode(ctx context.Context, clusterID int64, n Node) error {
	ids := identityColumns(n.Identities)
	_, err := f.tx.Exec(ctx, `WITH node AS (
			INSERT INTO kube_nodes (kube_cluster_id, vm_id, ordinal, node_name) VALUES ($1, $2, $3, $4) RETURNING id)
		INSERT INTO node_identities (node_id, name, cert, key_sealed, not_after)
		SELECT node.id, u.name, u.cert, u.key_sealed, u.not_after
		FROM node, unnest($5::text[], $6::text[], $7::bytea[], $8::timestamptz[]) AS u (name, cert, key_sealed, not_after)`,
		clusterID, n.VMID, n.Ordinal, n.Name, ids.names, ids.certs, ids.keys, ids.notAfters)
	if err != nil {
		return fmt.Errorf("inserting node %d: %w", n.VMID, err)
	}
	return nil
}

// Commit makes the founding durable.
func (f *FoundingTx) Commit(ctx context.Context) error {
	if err := f.tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing founding: %w", err)
	}
	return nil
}

// Rollback abandons the founding; safe after Commit.
func (f *FoundingTx) Rollback(ctx context.Context) {
	// A failed rollback makes pgx discard the connection, and the server
	// aborts the transaction when it goes; there is nothing else to do.
	_ = f.tx.Rollback(ctx)
}
