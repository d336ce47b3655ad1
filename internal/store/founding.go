package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrLeaseLost means the operation's lease is no longer the caller's: it ran
// out and the reconciler (or another invocation) took the cluster over. The
// caller must stop making side effects for it.
var ErrLeaseLost = errors.New("the operation's lease is held by another invocation")

// Lease names who drives a cluster's founding or deletion, and until when.
// Every write of an operation is fenced by Owner, so an invocation that was
// only slow (not dead) cannot write over its successor.
type Lease struct {
	Owner string
	Until time.Time
}

// ReserveClusterID takes the next cluster id, so keys can be sealed under
// their cluster's id before the row exists. A reserved id that is never
// used is a gap in the sequence, nothing more.
func (s *Store) ReserveClusterID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('kube_clusters', 'id'))`).Scan(&id); err != nil {
		return 0, fmt.Errorf("reserving cluster id: %w", err)
	}
	return id, nil
}

// BeginFounding commits the cluster (status founding), its founding
// operation (held by lease, with the validated request as its spec) and
// its intended nodes (no VM yet) in one statement, whatever the node count,
// before any remote call; the cluster's ordinal high-water mark is theirs.
// A cluster already recorded under the same (org, idempotency key) gives
// ErrDuplicate: ON CONFLICT DO NOTHING waits only
// for this one statement of a concurrent request, never for a founding.
func (s *Store) BeginFounding(ctx context.Context, c Cluster, nodes []Node, lease Lease) error {
	ordinals, names := make([]int, len(nodes)), make([]string, len(nodes))
	for i, n := range nodes {
		ordinals[i], names[i] = n.Ordinal, n.Name
	}
	tag, err := s.pool.Exec(ctx, `WITH c AS (
			INSERT INTO kube_clusters (id, org_id, project_id, name, control_plane_dns_name,
			status, key_algorithm, kubernetes_version, cluster_domain, service_cidr, pod_cidr, control_plane_count,
			security_group_ids, kms_key_id, wrapped_data_key, ca_cert, ca_key_sealed, etcd_ca_cert, etcd_ca_key_sealed,
			front_proxy_ca_cert, front_proxy_ca_key_sealed, service_account_pub, service_account_key_sealed,
			idempotency_key, request_fingerprint, resumable, cni, artifacts,
			create_token_key, secrets_encryption_key_sealed,
			restored_from_snapshot_id, restore_object_key, restore_size_bytes, restore_sha256, last_ordinal,
			unhealthy_after_seconds, max_unhealthy_percent)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$29,$30,$31,$32,$33,
				$36,$37,$38,$39,$40,$41,$42)
			ON CONFLICT (org_id, idempotency_key) DO NOTHING
			RETURNING id
		), op AS (
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, lease_owner, lease_until, spec)
			SELECT '`+KindFounding+`', c.id, '`+TargetCluster+`', c.id, 'running', '`+ReasonInProgress+`', $27, $28, $26::jsonb FROM c
		)
		INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name)
		SELECT c.id, u.ordinal, u.name FROM c, unnest($34::int[], $35::text[]) AS u (ordinal, name)`,
		c.ID, c.OrgID, c.ProjectID, c.Name, c.ControlPlaneDNSName, StatusFounding, c.KeyAlgorithm, c.KubernetesVersion,
		c.ClusterDomain, c.ServiceCIDR, c.PodCIDR, c.ControlPlaneCount, c.SecurityGroupIDs, c.KMSKeyID,
		c.WrappedDataKey, c.CACert, c.CAKeySealed, c.EtcdCACert, c.EtcdCAKeySealed, c.FrontProxyCACert,
		c.FrontProxyCAKeySealed, c.ServiceAccountPub, c.ServiceAccountKeySealed, c.IdempotencyKey, c.RequestFingerprint,
		string(c.FoundingSpec), lease.Owner, lease.Until, c.Resumable, c.CNI, jsonOrNull(c.Artifacts),
		c.CreateTokenKey, c.SecretsEncryptionKeySealed, ordinals, names,
		c.RestoredFromSnapshotID, c.RestoreObjectKey, c.RestoreSizeBytes, c.RestoreSHA256, slices.Max(append(ordinals, 0)),
		c.UnhealthyAfterSeconds, c.MaxUnhealthyPercent)
	if err == nil && tag.RowsAffected() == 0 {
		// The cluster's insert did nothing, so no node was inserted either.
		err = ErrDuplicate
	}
	if err != nil {
		return fmt.Errorf("beginning founding: %w", err)
	}
	return nil
}

// jsonOrNull is a JSON column's parameter: NULL for no document.
func jsonOrNull(doc []byte) *string {
	if len(doc) == 0 {
		return nil
	}
	s := string(doc)
	return &s
}

// fenced runs one UPDATE of an operation's cluster that only the lease
// owner may make: sql's $1 is the cluster id, $2 the owner, then args.
func (s *Store) fenced(ctx context.Context, what, sql string, clusterID int64, owner string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, append([]any{clusterID, owner}, args...)...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, ErrLeaseLost)
	}
	return nil
}

// fencedCount runs one statement of an operation that answers how many
// rows it moved (0: the lease is not owner's): sql's $1 is the cluster
// id, $2 the owner, then args.
func (s *Store) fencedCount(ctx context.Context, what, sql string, clusterID int64, owner string, args ...any) error {
	var moved int64
	err := s.pool.QueryRow(ctx, sql, append([]any{clusterID, owner}, args...)...).Scan(&moved)
	if err == nil && moved == 0 {
		err = ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// leaseHeld is the fence of every write of a cluster's rows: a live
// operation of cluster $1 is the owner's ($2).
var leaseHeld = `id = $1 AND ` + opHeld("$1")

// MarkSecurityGroupRequested records that a security group create is about
// to be sent.
func (s *Store) MarkSecurityGroupRequested(ctx context.Context, clusterID int64, owner string) error {
	return s.fenced(ctx, "recording a security group request", `UPDATE kube_clusters
		SET security_group_requested = true, updated_at = now() WHERE `+leaseHeld, clusterID, owner)
}

// RecordSecurityGroup records the group founding created; the VMs are
// created in it.
func (s *Store) RecordSecurityGroup(ctx context.Context, clusterID int64, owner string, sgID int64) error {
	return s.fenced(ctx, "recording the security group", `UPDATE kube_clusters
		SET created_security_group_id = $3, security_group_ids = ARRAY[$3::bigint], updated_at = now()
		WHERE `+leaseHeld, clusterID, owner, sgID)
}

// Fence is the lease an operation's node writes are fenced by: a
// founding's (the cluster's lease, ClusterLease) or a pool operation's (the
// pool's lease while its cluster is active, PoolLease). Nodes are named by
// ordinal within the fence's cluster or pool.
type Fence struct {
	what  string // "cluster 7", "node pool 3", for errors
	id    int64  // the cluster's or the pool's id ($1)
	owner string // the lease owner ($2)
	nodes string // which kube_nodes n are the operation's, over $1
	held  string // the EXISTS condition that the lease is still owner's, over $1 and $2
}

// ClusterLease fences a founding's writes of its nodes.
func ClusterLease(clusterID int64, owner string) Fence {
	return Fence{what: fmt.Sprintf("cluster %d", clusterID), id: clusterID, owner: owner,
		nodes: `n.kube_cluster_id = $1`, held: `SELECT 1 FROM kube_clusters WHERE ` + leaseHeld}
}

// PoolLease fences a pool operation's writes of its workers: the pool's
// lease is owner's and its cluster is active (a cluster being deleted
// takes its workers over).
func PoolLease(poolID int64, owner string) Fence {
	return Fence{what: fmt.Sprintf("node pool %d", poolID), id: poolID, owner: owner,
		nodes: `n.node_pool_id = $1`, held: `SELECT 1 FROM node_pools p JOIN kube_clusters k ON k.id = p.kube_cluster_id
			WHERE ` + poolLeaseHeld + ` AND k.status = 'active'`}
}

// MarkVMsRequested records that the creates of the nodes at ordinals are
// about to be sent, in one statement whatever their number.
func (s *Store) MarkVMsRequested(ctx context.Context, f Fence, ordinals []int) error {
	return s.fencedNodes(ctx, "recording VM requests", `create_requested = true`,
		`unnest($3::int[]) AS u (ordinal)`, f, ordinals)
}

// RecordVMs records the VMs the compute API created, by node ordinal, and
// takes back the marks of the creates never sent (unsent ordinals), in one
// statement whatever their number: an undo must not create, to delete it,
// a VM nobody asked for.
func (s *Store) RecordVMs(ctx context.Context, f Fence, created map[int]int64, unsent []int) error {
	var ordinals []int
	var ids []*int64
	var requested []bool
	for ordinal, id := range created {
		ordinals, ids, requested = append(ordinals, ordinal), append(ids, &id), append(requested, true)
	}
	for _, ordinal := range unsent {
		ordinals, ids, requested = append(ordinals, ordinal), append(ids, nil), append(requested, false)
	}
	return s.fencedNodes(ctx, "recording VMs", `vm_id = u.vm_id, create_requested = u.requested`,
		`unnest($3::int[], $4::bigint[], $5::bool[]) AS u (ordinal, vm_id, requested)`,
		f, ordinals, ids, requested)
}

// RecordAddresses records the addresses the compute API reported for
// nodes (by ordinal), in one statement whatever their number.
func (s *Store) RecordAddresses(ctx context.Context, f Fence, nodes []Node) error {
	ordinals := make([]int, len(nodes))
	v4, v6, public := make([]string, len(nodes)), make([]string, len(nodes)), make([]string, len(nodes))
	for i, n := range nodes {
		ordinals[i], v4[i], v6[i], public[i] = n.Ordinal, n.IPv4, n.IPv6, n.PublicIPv4
	}
	return s.fencedNodes(ctx, "recording addresses", `ipv4 = u.ipv4, ipv6 = u.ipv6, public_ipv4 = u.public_ipv4`,
		`unnest($3::int[], $4::text[], $5::text[], $6::text[]) AS u (ordinal, ipv4, ipv6, public_ipv4)`,
		f, ordinals, v4, v6, public)
}

// fencedNodes updates, by set, the nodes of f's operation while f's lease
// holds, one for each row of rows (a FROM item named u with an ordinal
// column over $3 on): $1 the fence's id, $2 its owner, then args.
func (s *Store) fencedNodes(ctx context.Context, what, set, rows string, f Fence, args ...any) error {
	return s.fenced(ctx, what+" of "+f.what, `UPDATE kube_nodes n SET `+set+` FROM `+rows+`
		WHERE `+f.nodes+` AND n.ordinal = u.ordinal AND EXISTS (`+f.held+`)`, f.id, f.owner, args...)
}

// RecordIdentities writes the stored identities (one row each) of nodes,
// in one statement whatever their number; a node that has them already
// keeps the first ones. Every certificate's serial is recorded, kept or
// not: each was issued (the one not kept never left k8sapi).
func (s *Store) RecordIdentities(ctx context.Context, clusterID int64, owner string, nodes []Node) error {
	var ordinals []int
	var all []Identity
	for _, n := range nodes {
		for _, id := range n.Identities {
			ordinals, all = append(ordinals, n.Ordinal), append(all, id)
		}
	}
	ids := identityColumns(all)
	return s.fenced(ctx, "recording node identities", `
		WITH issued AS (
			`+recordIssued+` SELECT n.kube_cluster_id, n.id, u.name, u.serial
			FROM unnest($3::int[], $4::text[], $8::text[]) AS u (ordinal, name, serial)
			JOIN kube_nodes n ON n.kube_cluster_id = $1 AND n.ordinal = u.ordinal
			WHERE EXISTS (SELECT 1 FROM kube_clusters WHERE `+leaseHeld+`)
			ON CONFLICT DO NOTHING
		)
		INSERT INTO node_identities (node_id, name, cert, key_sealed, not_after)
		SELECT n.id, u.name, u.cert, u.key_sealed, u.not_after
		FROM unnest($3::int[], $4::text[], $5::text[], $6::bytea[], $7::timestamptz[])
			AS u (ordinal, name, cert, key_sealed, not_after)
		JOIN kube_nodes n ON n.kube_cluster_id = $1 AND n.ordinal = u.ordinal
		WHERE EXISTS (SELECT 1 FROM kube_clusters WHERE `+leaseHeld+`)
		ON CONFLICT (node_id, name) DO UPDATE SET cert = node_identities.cert`,
		clusterID, owner, ordinals, ids.names, ids.certs, ids.keys, ids.notAfters, ids.serials)
}

// FinishFounding makes the founding's cluster active and ends its
// founding.
func (s *Store) FinishFounding(ctx context.Context, clusterID int64, owner string) error {
	return s.fenced(ctx, "finishing founding", `WITH k AS (
			UPDATE kube_clusters SET status = 'active', updated_at = now()
			WHERE `+leaseHeld+` AND status = 'founding' RETURNING id
		)
		`+endOperation+` AND kind = '`+KindFounding+`' AND EXISTS (SELECT 1 FROM k)`,
		clusterID, owner, OpSucceeded, ReasonSucceeded, "")
}

// endOperation ends the live operation of cluster $1 held by owner $2 with
// state $3, reason $4 and message $5, and lets go of its lease.
const endOperation = `UPDATE operations SET state = $3, reason = $4, message = $5, lease_owner = NULL, lease_until = NULL,
	updated_at = now(), ended_at = now() WHERE kube_cluster_id = $1 AND lease_owner = $2 AND ended_at IS NULL`

// Release lets go of the owner's founding or deletion: the reconciler
// takes it over once until has passed. It records the status the cluster
// goes on in (founding or deleting: a founding whose undo failed ends,
// and a deletion goes on under the same lease), why, and whether a
// founding may be finished rather than undone.
func (s *Store) Release(ctx context.Context, clusterID int64, owner string, r Released) error {
	return s.fencedCount(ctx, "releasing the operation", `WITH k AS (
			UPDATE kube_clusters SET status = $3, resumable = resumable OR $6, updated_at = now()
			WHERE `+leaseHeld+` RETURNING id
		), ended AS (
			UPDATE operations o SET state = 'failed', reason = '`+ReasonFailed+`', message = $5, lease_owner = NULL,
				lease_until = NULL, updated_at = now(), ended_at = now()
			FROM k WHERE o.kube_cluster_id = k.id AND o.lease_owner = $2 AND o.ended_at IS NULL
			  AND o.kind = '`+KindFounding+`' AND $3 = '`+StatusDeleting+`'
			RETURNING o.id
		), deleting AS (
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message, lease_owner, lease_until)
			SELECT '`+KindDeletion+`', $1, '`+TargetCluster+`', $1, 'running', $7, $5, $2, $4 FROM ended
		), moved AS (
			UPDATE operations o SET lease_until = $4, reason = $7, message = $5, step = $8, updated_at = now()
			FROM k WHERE o.kube_cluster_id = k.id AND o.lease_owner = $2 AND o.ended_at IS NULL
			  AND NOT (o.kind = '`+KindFounding+`' AND $3 = '`+StatusDeleting+`')
			RETURNING o.id
		)
		SELECT (SELECT count(*) FROM ended) + (SELECT count(*) FROM moved)`,
		clusterID, owner, r.Status, r.Until, r.Reason, r.Resumable, runningReason(r.Reason), r.Step)
}

// Released is how an operation is let go (see Release).
type Released struct {
	Status    string
	Until     time.Time
	Reason    string
	Resumable bool
	Step      string // the step it stands at ("": none)
}

// BeginDeleting moves one of org's clusters to deleting under lease, in
// one check: no live operation of the cluster holds it off. A founding,
// a deletion or a pool operation holds it off while its lease is live
// (another invocation drives it; once its driver died, the deletion goes
// ahead: a founding ends superseded, a deletion is taken over, a pool
// operation that starts meanwhile finds the cluster no longer active and
// stops before its next remote call); any other kind (a control-plane
// node's replacement or a control-plane scaling, whose new VM it alone
// knows how to finish or undo) until it ends. Held off: ErrLeaseLost. A deleted cluster is left as it
// is (ErrLeaseLost too; the caller read it first). A new deletion carries
// the cluster's reason on (a failed founding keeps saying why).
func (s *Store) BeginDeleting(ctx context.Context, orgID, clusterID int64, lease Lease, now time.Time) error {
	var began bool
	err := s.pool.QueryRow(ctx, `WITH k AS (
			UPDATE kube_clusters SET status = 'deleting', updated_at = now()
			WHERE org_id = $1 AND id = $2 AND status <> 'deleted'
			  AND NOT EXISTS (SELECT 1 `+liveOpsOf("$2")+` AND (o.lease_until >= $5 OR NOT o.kind = ANY($6)))
			RETURNING id, `+clusterLastOp+`
		), taken AS (
			UPDATE operations o SET lease_owner = $3, lease_until = $4, updated_at = now() FROM k
			WHERE o.target_type = '`+TargetCluster+`' AND o.target_id = k.id AND o.kind = '`+KindDeletion+`' AND o.ended_at IS NULL
			RETURNING o.id
		), superseded AS (
			UPDATE operations o SET state = 'failed', reason = '`+ReasonSuperseded+`', lease_owner = NULL, lease_until = NULL,
				updated_at = now(), ended_at = now()
			FROM k WHERE o.target_type = '`+TargetCluster+`' AND o.target_id = k.id AND o.kind <> '`+KindDeletion+`' AND o.ended_at IS NULL
			RETURNING o.id
		), begun AS (
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, message, lease_owner, lease_until)
			SELECT '`+KindDeletion+`', k.id, '`+TargetCluster+`', k.id, 'running', '`+ReasonInProgress+`', k.status_reason, $3, $4
			-- superseded is read first: the one live operation of the
			-- cluster has ended before the deletion's row is inserted.
			FROM k, (SELECT count(*) FROM superseded) s WHERE NOT EXISTS (SELECT 1 FROM taken)
		)
		SELECT EXISTS (SELECT 1 FROM k)`, orgID, clusterID, lease.Owner, lease.Until, now, DeletionTakesOver).Scan(&began)
	if err == nil && !began {
		err = ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("beginning deletion of cluster %d: %w", clusterID, err)
	}
	return nil
}

// EndOperation ends the owner's founding (status failed) or deletion
// (status deleted) and crypto-shreds the cluster in one transaction: the
// wrapped data key and every sealed key are overwritten, so nothing can
// open them again. Every other live operation of the cluster (its pools')
// ends superseded: the teardown deleted their VMs with the rest.
func (s *Store) EndOperation(ctx context.Context, clusterID int64, owner, status, reason string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		empty := []byte{}
		tag, err := tx.Exec(ctx, `UPDATE kube_clusters SET wrapped_data_key = $3, ca_key_sealed = $3,
			etcd_ca_key_sealed = $3, front_proxy_ca_key_sealed = $3, service_account_key_sealed = $3,
			secrets_encryption_key_sealed = $3, status = $4, updated_at = now()
			WHERE `+leaseHeld, clusterID, owner, empty, status)
		if err != nil {
			return fmt.Errorf("ending the operation as %s: %w", status, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("ending the operation as %s: %w", status, ErrLeaseLost)
		}
		return endCluster(ctx, tx, clusterID, owner, status, reason)
	})
}

// endCluster ends the owner's operation of an ended cluster as status
// says, supersedes the others, destroys its node keys and ends its pools.
func endCluster(ctx context.Context, tx pgx.Tx, clusterID int64, owner, status, reason string) error {
	r := endedReason(status)
	if _, err := tx.Exec(ctx, endOperation, clusterID, owner, endedState(r), r, reason); err != nil {
		return fmt.Errorf("ending the operation as %s: %w", status, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE operations SET state = 'failed', reason = '`+ReasonSuperseded+`', lease_owner = NULL,
		lease_until = NULL, updated_at = now(), ended_at = now() WHERE kube_cluster_id = $1 AND ended_at IS NULL`, clusterID); err != nil {
		return fmt.Errorf("ending the cluster's other operations: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE node_identities SET key_sealed = $2
		WHERE node_id IN (SELECT id FROM kube_nodes WHERE kube_cluster_id = $1)`, clusterID, []byte{}); err != nil {
		return fmt.Errorf("destroying node identity keys: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE ca_generations SET key_sealed = $2, updated_at = now() WHERE kube_cluster_id = $1`,
		clusterID, []byte{}); err != nil {
		return fmt.Errorf("destroying CA generation keys: %w", err)
	}
	// The teardown deleted the workers' VMs with the rest.
	if _, err := tx.Exec(ctx, `UPDATE node_pools SET state = 'deleted', updated_at = now()
		WHERE kube_cluster_id = $1 AND state <> 'deleted'`, clusterID); err != nil {
		return fmt.Errorf("ending the node pools: %w", err)
	}
	return nil
}
