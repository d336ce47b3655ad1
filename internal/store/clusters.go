package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster statuses.
const (
	StatusFounding = "founding"
	StatusActive   = "active"
	StatusFailed   = "failed"
	StatusDeleting = "deleting"
	StatusDeleted  = "deleted"
)

// Node roles (kube_nodes.role, migration 017).
const (
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
)

// ClusterStatuses is every cluster status, in lifecycle order.
var ClusterStatuses = []string{StatusFounding, StatusActive, StatusFailed, StatusDeleting, StatusDeleted}

// Cluster is a kube_clusters row. Sealed fields hold envelope ciphertext.
type Cluster struct {
	ID                      int64     `db:"id"`
	OrgID                   int64     `db:"org_id"`
	ProjectID               int64     `db:"project_id"`
	Name                    string    `db:"name"`
	ControlPlaneDNSName     string    `db:"control_plane_dns_name"`
	Status                  string    `db:"status"`
	KeyAlgorithm            string    `db:"key_algorithm"`
	KubernetesVersion       string    `db:"kubernetes_version"`
	ClusterDomain           string    `db:"cluster_domain"`
	ServiceCIDR             string    `db:"service_cidr"`
	PodCIDR                 string    `db:"pod_cidr"`
	CNI                     string    `db:"cni"` // migration 007
	ControlPlaneCount       int       `db:"control_plane_count"`
	SecurityGroupIDs        []int64   `db:"security_group_ids"`
	CreatedSecurityGroupID  *int64    `db:"created_security_group_id"`
	KMSKeyID                string    `db:"kms_key_id"`
	WrappedDataKey          []byte    `db:"wrapped_data_key"`
	CACert                  string    `db:"ca_cert"`
	CAKeySealed             []byte    `db:"ca_key_sealed"`
	EtcdCACert              string    `db:"etcd_ca_cert"`
	EtcdCAKeySealed         []byte    `db:"etcd_ca_key_sealed"`
	FrontProxyCACert        string    `db:"front_proxy_ca_cert"`
	FrontProxyCAKeySealed   []byte    `db:"front_proxy_ca_key_sealed"`
	ServiceAccountPub       string    `db:"service_account_pub"`
	ServiceAccountKeySealed []byte    `db:"service_account_key_sealed"`
	DNSConfigured           bool      `db:"dns_configured"`
	DNSError                string    `db:"dns_error"`
	IdempotencyKey          *string   `db:"idempotency_key"`
	RequestFingerprint      *string   `db:"request_fingerprint"`
	CreatedAt               time.Time `db:"created_at"`
	UpdatedAt               time.Time `db:"updated_at"`
	// The durable operation (migration 004, its lease and reason in
	// operations since 025): the spec VMs are created from (the founding's),
	// why the cluster failed or a deletion is retried, whether a security
	// group create was ever sent, and whether the caller can still follow
	// the founding.
	FoundingSpec           []byte `db:"founding_spec"`
	StatusReason           string `db:"status_reason"`
	SecurityGroupRequested bool   `db:"security_group_requested"`
	Resumable              bool   `db:"resumable"`
	// LastOp is the cluster's latest own operation (a founding, a
	// deletion; migration 025): StatusReason is its message.
	LastOp *OpRecord `db:"last_op"`
	// Artifacts is the artifact set recorded at founding (migration 008,
	// artifacts.Set as JSON); nil for a cluster founded before it.
	Artifacts []byte `db:"artifacts"`
	// CreateTokenKey keys the idempotency tokens of the cluster's creates at
	// the compute API (migration 012; vm.Token); nil for a
	// cluster founded before it.
	CreateTokenKey []byte `db:"create_token_key"`
	// SecretsEncryptionKeySealed is the API servers' key for Secrets at
	// rest, sealed (migration 010); nil for a cluster founded before it.
	SecretsEncryptionKeySealed []byte `db:"secrets_encryption_key_sealed"`
	// The snapshot a restored cluster's etcd starts from, copied at
	// founding (migration 019); all nil for a cluster founded empty.
	RestoredFromSnapshotID *int64  `db:"restored_from_snapshot_id"`
	RestoreObjectKey       *string `db:"restore_object_key"`
	RestoreSizeBytes       *int64  `db:"restore_size_bytes"`
	RestoreSHA256          *string `db:"restore_sha256"`
	// Spec is the cluster file last applied (migration 026,
	// apitypes.ClusterFile as JSON); nil for a cluster founded without one.
	Spec []byte `db:"spec"`
	// SnapshotIntervalSeconds is the etcd snapshot schedule (migration
	// 016), 0 for none.
	SnapshotIntervalSeconds int `db:"etcd_snapshot_interval_seconds"`
	// The remediation settings (migration 028): a node unhealthy for
	// longer than UnhealthyAfterSeconds is replaced (0: never), a worker
	// only while at most MaxUnhealthyPercent of its pool is unhealthy.
	UnhealthyAfterSeconds int `db:"unhealthy_after_seconds"`
	MaxUnhealthyPercent   int `db:"max_unhealthy_percent"`
	// AdminGroup is the group of the operators' admin certificates:
	// pki.ClusterAdminsGroup, which the cluster's RBAC binds to
	// cluster-admin, or system:masters for a cluster founded before that
	// binding existed (migration 030), whose API server knows no other.
	AdminGroup string `db:"admin_group"`
	// CAGenerations are the rows of the cluster's roots' generations
	// (migration 034): a root with none is generation 1, current, in the
	// columns above (keyring.Generations). CARotation is its latest CA
	// rotation, nil if it never had one.
	CAGenerations []CAGeneration `db:"ca_generations"`
	CARotation    *Rotation      `db:"ca_rotation"`
	// Endpoint is the node the control-plane name points at and when it
	// last moved (migration 035); zero: never recorded, the lowest-ordinal
	// live control-plane node.
	Endpoint Endpoint `db:"endpoint"`
}

// Endpoint is where a cluster's control-plane name points (migration
// 035): the VM of the node it was last pointed at (0: never recorded),
// and when it last moved with the TTL of the record written then (nil:
// never moved).
type Endpoint struct {
	VMID       int64      `json:"vm_id"`
	MovedAt    *time.Time `json:"moved_at"`
	TTLSeconds int        `json:"ttl_seconds"`
}

// endpointColumn is the cluster's Endpoint as one JSON column.
const endpointColumn = `jsonb_build_object('vm_id', coalesce(endpoint_vm_id, 0), 'moved_at', endpoint_moved_at,
	'ttl_seconds', coalesce(endpoint_ttl_seconds, 0)) AS endpoint`

var clusterColumns = `id, org_id, project_id, name, control_plane_dns_name, status, key_algorithm,
	kubernetes_version, cluster_domain, service_cidr, pod_cidr, cni, control_plane_count, security_group_ids, created_security_group_id,
	kms_key_id, wrapped_data_key, ca_cert, ca_key_sealed, etcd_ca_cert, etcd_ca_key_sealed,
	front_proxy_ca_cert, front_proxy_ca_key_sealed, service_account_pub, service_account_key_sealed,
	dns_configured, dns_error, idempotency_key, request_fingerprint, created_at, updated_at,
	` + clusterFoundingSpec + `,
	` + clusterLastOp + `, security_group_requested, resumable, artifacts,
	create_token_key, secrets_encryption_key_sealed,
	restored_from_snapshot_id, restore_object_key, restore_size_bytes, restore_sha256,
	spec, etcd_snapshot_interval_seconds, unhealthy_after_seconds, max_unhealthy_percent, admin_group,
	` + caGenerationsColumn(true) + `, ` + caRotationColumn + `, ` + endpointColumn

var clusterLastOp = lastOp(TargetCluster, "kube_clusters.id", "status_reason")

// clusterFoundingSpec is the request the cluster was founded with, kept
// on its founding operation (migration 025).
const clusterFoundingSpec = `(SELECT o.spec FROM operations o WHERE o.target_type = '` + TargetCluster + `' AND o.target_id = kube_clusters.id
		AND o.kind = '` + KindFounding + `' ORDER BY o.id LIMIT 1) AS founding_spec`

// Node is one node (a kube_nodes row: a control-plane node, or a worker
// of a pool) with the addresses the compute API reported for its VM.
type Node struct {
	ID        int64 // the row's, never reused: a worker's create token derives from it
	ClusterID int64
	// Role is RoleControlPlane or RoleWorker; PoolID is a worker's pool (0
	// for a control-plane node); Retiring says the worker is to be removed
	// (migration 017).
	Role     string
	PoolID   int64
	Retiring bool
	// ReplacementID is the replacement that made the node (migration 018;
	// 0 for a node of the founding or of a pool): its create token derives
	// from it.
	ReplacementID int64
	// ScalingID is the control-plane scaling's operation that made the node
	// (migration 029; 0 otherwise): like a replacement's, it joins etcd as a learner.
	ScalingID int64
	// VMID is 0 until the compute API answered the create;
	// CreateRequested says whether the create was ever sent.
	VMID            int64
	CreateRequested bool
	Ordinal         int
	Name            string
	// KubernetesVersion is the version the node's bundle is rendered for
	// (migration 031): its cluster's, or an upgrade's target.
	KubernetesVersion string
	IPv4, IPv6        string
	PublicIPv4        string
	// Issued says the node's stored identities are recorded.
	Issued bool
	// Phase is where the node's bootstrap stands (internal/progress), with
	// the last report's message and when it was recorded.
	Phase          string
	PhaseMessage   string
	PhaseUpdatedAt time.Time
	// BootstrapOpenedAt is when the node's bootstrap window opened: at
	// founding, or at its last re-open.
	BootstrapOpenedAt time.Time
	// ReadyAt is when the node first reported ready in its current
	// bootstrap; nil until then and after a re-open. Once set, nothing the
	// VM reports re-opens its bundle.
	ReadyAt *time.Time
	// PhaseTimes is when the node first reached each phase of its current
	// bootstrap, by phase; a skipped phase has none.
	PhaseTimes map[string]time.Time
	// Identities are the node's stored identities, by name. They are loaded
	// only for the node that asks, so a peer's sealed keys never leave the
	// database for another node's request.
	Identities []Identity
	// Expiry is when the node's stored identities expire, loaded for every
	// node (no keys in it).
	Expiry IdentityExpiry
	// Health is what the node's last health report said (migration 028).
	Health NodeHealth
	// DeprecatedAPIs are the deprecated APIs the node's API server served,
	// each with when the node last reported it (migration 031; the health
	// report merges each report in, RecordHealth), and when the node last
	// reported them; nil: never reported.
	DeprecatedAPIs           []DeprecatedAPI
	DeprecatedAPIsReportedAt *time.Time
	// EtcdRemovedAt is when a member that stays reported this retiring
	// node's etcd member removed (migration 033); nil: not yet.
	EtcdRemovedAt *time.Time
	// CAPhase is the CA rotation phase the node last applied (migration 034).
	CAPhase NodeCAPhase
}

// DeprecatedAPI is one deprecated API requested of an API server
// (apiserver_requested_deprecated_apis): its group, version, resource and
// subresource, the release that removes it ("1.36"; "" when none is
// planned), and when the node last reported it requested. Stored as
// kube_nodes.deprecated_apis's elements, these keys.
type DeprecatedAPI struct {
	Group          string    `json:"group"`
	Version        string    `json:"version"`
	Resource       string    `json:"resource"`
	Subresource    string    `json:"subresource"`
	RemovedRelease string    `json:"removed_release"`
	LastSeen       time.Time `json:"last_seen"`
}

// DeprecatedAPIsWithin is how long a reported deprecated API counts: the
// upgrade gate's "requested in the last day". A node's record keeps an
// API no longer than this after its last report of it.
const DeprecatedAPIsWithin = 24 * time.Hour

// IdentityExpiry is the earliest not_after among a node's stored
// identities, nil if none has one, and the certificates of the identities
// stored before not_after was (their expiry is in the certificate only).
type IdentityExpiry struct {
	Earliest     *time.Time
	UndatedCerts []string
}

// Identity is one stored node identity (a node_identities row): a
// certificate and its sealed key, named by the cert table's pki.Name, and
// when the certificate expires.
type Identity struct {
	Name      string
	Cert      string
	KeySealed []byte
	NotAfter  time.Time
	// WindowOpenedAt is the bootstrap window the identity was issued for;
	// nil for one issued at founding, kept for the node's life.
	WindowOpenedAt *time.Time
	// BootstrapOnly identities are never renewed nor counted in Expiry.
	BootstrapOnly bool
}

func collectCluster(rows pgx.Rows) (Cluster, error) {
	return pgx.CollectOneRow(rows, pgx.RowToStructByName[Cluster])
}

// Cluster returns one cluster of org.
func (s *Store) Cluster(ctx context.Context, orgID, id int64) (Cluster, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+clusterColumns+` FROM kube_clusters WHERE org_id = $1 AND id = $2`, orgID, id)
	c, err := collectCluster(rows)
	if err != nil {
		return c, fmt.Errorf("loading cluster %d: %w", id, notFound(err))
	}
	return c, nil
}

// ClusterByIdempotencyKey returns the cluster a committed founding recorded
// under key.
func (s *Store) ClusterByIdempotencyKey(ctx context.Context, orgID int64, key string) (Cluster, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+clusterColumns+` FROM kube_clusters WHERE org_id = $1 AND idempotency_key = $2`, orgID, key)
	c, err := collectCluster(rows)
	if err != nil {
		return c, fmt.Errorf("loading cluster by idempotency key: %w", notFound(err))
	}
	return c, nil
}

// ClusterQuery selects a page of an org's clusters, newest first.
type ClusterQuery struct {
	Status   string // only clusters of this status; "" is every one not deleted
	BeforeID int64  // only clusters older than this one; 0 is from the newest
	Limit    int    // at most this many
}

// listedColumns are the columns of a cluster a listing shows: its spec
// (the founding's request and the file kept), state, latest operation and
// CA certificates (their expiry), not its sealed keys, wrapped data key or
// artifacts, which are most of a row's bytes and which a page of clusters
// never opens.
var listedColumns = `id, org_id, project_id, name, control_plane_dns_name, status, key_algorithm,
	kubernetes_version, cluster_domain, service_cidr, pod_cidr, cni, control_plane_count,
	ca_cert, etcd_ca_cert, front_proxy_ca_cert, dns_configured, dns_error, created_at, updated_at,
	restored_from_snapshot_id, ` + clusterFoundingSpec + `, ` + clusterLastOp + `, spec, etcd_snapshot_interval_seconds,
	unhealthy_after_seconds, max_unhealthy_percent, ` + caGenerationsColumn(false) + `, ` + caRotationColumn + `, ` + endpointColumn

// ListClusters returns the page of org's clusters q selects, with
// listedColumns only (the other fields are zero).
func (s *Store) ListClusters(ctx context.Context, orgID int64, q ClusterQuery) ([]Cluster, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+listedColumns+` FROM kube_clusters
		WHERE org_id = $1 AND (status = $2 OR ($2 = '' AND status <> 'deleted'))
		  AND ($3 = 0 OR id < $3)
		ORDER BY id DESC LIMIT $4`, orgID, q.Status, q.BeforeID, q.Limit)
	cs, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[Cluster])
	if err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	return cs, nil
}

// ClusterNodes returns the cluster's nodes by ordinal, without identities.
func (s *Store) ClusterNodes(ctx context.Context, clusterID int64) ([]Node, error) {
	return s.nodes(ctx, `n.kube_cluster_id = $1`, clusterID)
}

// Members are the nodes (control-plane and workers) and the live node pools
// of clusters.
type Members struct {
	Nodes []Node
	Pools []Pool
}

// MembersOf returns the nodes of every cluster in ids, without identities,
// ordered by cluster and ordinal, and their live pools by cluster and name:
// one round trip (one batch) for a whole listing.
func (s *Store) MembersOf(ctx context.Context, ids []int64) (Members, error) {
	var m Members
	b := &pgx.Batch{}
	errs := queueMembers(b, &m, `ANY($1)`, ids)
	if err := cmp.Or(s.pool.SendBatch(ctx, b).Close(), errs[0], errs[1]); err != nil {
		return m, fmt.Errorf("loading the nodes and node pools of clusters: %w", err)
	}
	return m, nil
}

// queueMembers queues the reads of the nodes and live pools of the
// clusters whose id is = clusters (an SQL expression over args) into m;
// their errors are the answer's once the batch is read.
func queueMembers(b *pgx.Batch, m *Members, clusters string, args ...any) *[2]error {
	var errs [2]error
	b.Queue(nodesQuery(`n.kube_cluster_id = `+clusters), args...).Query(func(rows pgx.Rows) error {
		m.Nodes, errs[0] = collectNodes(rows)
		return nil
	})
	b.Queue(`SELECT `+poolColumns+` FROM node_pools WHERE kube_cluster_id = `+clusters+` AND state <> 'deleted'
		ORDER BY kube_cluster_id, name`, args...).Query(func(rows pgx.Rows) error {
		m.Pools, errs[1] = collectPools(rows)
		return nil
	})
	return &errs
}

// Shown is one cluster as GET /clusters/{id} shows it: the cluster, its
// members and its newest replacements.
type Shown struct {
	Cluster      Cluster
	Members      Members
	Replacements []Replacement
}

// ShowCluster reads one of org's clusters, its members and its newest
// replacements (at most replacements, newest first) in one round trip (one
// batch): read one after the other they were three, each a wait on a busy
// database. ErrNotFound when org has no such cluster; the other reads name
// only a cluster of org, so another org's rows are never read.
func (s *Store) ShowCluster(ctx context.Context, orgID, id int64, replacements int) (Shown, error) {
	var sh Shown
	var clusterErr, replErr error
	b := &pgx.Batch{}
	b.Queue(`SELECT `+clusterColumns+` FROM kube_clusters WHERE org_id = $1 AND id = $2`, orgID, id).Query(func(rows pgx.Rows) error {
		sh.Cluster, clusterErr = collectCluster(rows)
		return nil
	})
	const ofOrg = `(SELECT id FROM kube_clusters WHERE org_id = $1 AND id = $2)`
	errs := queueMembers(b, &sh.Members, ofOrg, orgID, id)
	b.Queue(`SELECT `+replacementColumns+` FROM node_replacements WHERE kube_cluster_id = `+ofOrg+`
		ORDER BY id DESC LIMIT $3`, orgID, id, replacements).Query(func(rows pgx.Rows) error {
		sh.Replacements, replErr = pgx.CollectRows(rows, pgx.RowToStructByName[Replacement])
		return nil
	})
	err := s.pool.SendBatch(ctx, b).Close()
	if clusterErr != nil {
		return sh, fmt.Errorf("loading cluster %d: %w", id, notFound(clusterErr))
	}
	if err = cmp.Or(err, errs[0], errs[1], replErr); err != nil {
		return sh, fmt.Errorf("loading cluster %d's members and replacements: %w", id, err)
	}
	return sh, nil
}

// nodes loads nodes matching where (over kube_nodes n), without stored
// identities.
func (s *Store) nodes(ctx context.Context, where string, arg any) ([]Node, error) {
	rows, _ := s.pool.Query(ctx, nodesQuery(where), arg)
	return collectNodes(rows)
}

// nodesQuery selects the nodes matching where ($1), without their stored
// identities: what a listing or a reconciler step reads.
func nodesQuery(where string) string {
	return nodesSelect(`NULL::text[], NULL::text[], NULL::bytea[], NULL::timestamptz[], NULL::timestamptz[], NULL::bool[]`, ``, where)
}

// nodesWithOwnIdentities selects the nodes matching where ($1) with the
// stored identities of the node whose VM is $2 (what its bundle needs).
func nodesWithOwnIdentities(where string) string {
	return nodesSelect(`ids.names, ids.certs, ids.keys, ids.not_afters, ids.windows, ids.bootstrap_only`, `
		LEFT JOIN LATERAL (
			SELECT array_agg(name ORDER BY name) AS names, array_agg(cert ORDER BY name) AS certs,
			       array_agg(key_sealed ORDER BY name) AS keys, array_agg(not_after ORDER BY name) AS not_afters,
			       array_agg(window_opened_at ORDER BY name) AS windows, array_agg(bootstrap_only ORDER BY name) AS bootstrap_only
			FROM node_identities WHERE node_id = n.id AND n.vm_id = $2
		) ids ON true`, where)
}

// nodesSelect is the nodes query with identities (columns, and the join
// they need). Every node's identities are read once, in one lateral
// aggregate (whether any is recorded, the earliest expiry, the undated
// certificates): ordered aggregates set up a sort per node even when they
// read nothing, which cost a listing of 50 clusters most of its time.
func nodesSelect(identities, identitiesJoin, where string) string {
	return `
		SELECT n.id, n.kube_cluster_id, n.role, coalesce(n.node_pool_id, 0), n.retiring, coalesce(n.replacement_id, 0), coalesce(n.scaling_id, 0), coalesce(n.vm_id, 0), n.create_requested, n.ordinal, n.node_name, n.kubernetes_version,
		       n.ipv4, n.ipv6, n.public_ipv4, exp.issued,
		       n.phase, n.message, n.updated_at, n.bootstrap_opened_at, n.ready_at, n.phase_times, n.deprecated_apis, n.deprecated_apis_reported_at, n.etcd_removed_at,
		       ` + identities + `, exp.earliest, exp.undated,
		       n.health_reported_at, n.health_checks, n.health_failing_since, n.remediation_refused,
		       coalesce(n.ca_rotation_id, 0), coalesce(n.ca_phase_applied, ''), n.ca_phase_applied_at
		FROM kube_nodes n` + identitiesJoin + `
		LEFT JOIN LATERAL (
			SELECT count(*) > 0 AS issued, min(not_after) FILTER (WHERE NOT bootstrap_only) AS earliest,
			       array_agg(cert) FILTER (WHERE not_after IS NULL AND NOT bootstrap_only) AS undated
			FROM node_identities WHERE node_id = n.id
		) exp ON true
		WHERE ` + where + ` ORDER BY n.kube_cluster_id, n.ordinal`
}

func collectNodes(rows pgx.Rows) ([]Node, error) {
	ns, err := pgx.CollectRows(rows, scanNode)
	if err != nil {
		return nil, fmt.Errorf("loading nodes: %w", err)
	}
	return ns, nil
}

func scanNode(r pgx.CollectableRow) (Node, error) {
	var (
		n            Node
		names, certs []string
		keys         [][]byte
		notAfters    []*time.Time
		windows      []*time.Time
		only         []bool
	)
	if err := r.Scan(&n.ID, &n.ClusterID, &n.Role, &n.PoolID, &n.Retiring, &n.ReplacementID, &n.ScalingID, &n.VMID, &n.CreateRequested, &n.Ordinal, &n.Name, &n.KubernetesVersion, &n.IPv4, &n.IPv6, &n.PublicIPv4, &n.Issued,
		&n.Phase, &n.PhaseMessage, &n.PhaseUpdatedAt, &n.BootstrapOpenedAt, &n.ReadyAt, &n.PhaseTimes, &n.DeprecatedAPIs, &n.DeprecatedAPIsReportedAt, &n.EtcdRemovedAt, &names, &certs, &keys, &notAfters,
		&windows, &only, &n.Expiry.Earliest, &n.Expiry.UndatedCerts,
		&n.Health.ReportedAt, &n.Health.Checks, &n.Health.FailingSince, &n.Health.RemediationRefused,
		&n.CAPhase.RotationID, &n.CAPhase.Phase, &n.CAPhase.AppliedAt); err != nil {
		return n, err
	}
	for i := range names {
		id := Identity{Name: names[i], Cert: certs[i], KeySealed: keys[i], WindowOpenedAt: windows[i], BootstrapOnly: only[i]}
		if notAfters[i] != nil {
			id.NotAfter = *notAfters[i]
		}
		n.Identities = append(n.Identities, id)
	}
	return n, nil
}

// Topology is what a bundle fetch needs: the cluster and every peer.
type Topology struct {
	Cluster Cluster
	Nodes   []Node
	// EtcdCRL is the cluster's current etcd CRL (control-plane topologies
	// only: every control-plane bundle carries it).
	EtcdCRL EtcdCRL
}

// clusterOfVM is the cluster whose node of role (a placeholder) has the VM $1.
func clusterOfVM(role string) string {
	return `(SELECT kube_cluster_id FROM kube_nodes WHERE vm_id = $1 AND role = ` + role + `)`
}

// TopologyForVM loads the cluster that vmID belongs to and all its
// control-plane nodes in one round trip (one batch: the cluster, its
// nodes); a worker's VM has none (ErrNotFound): it must never be served a
// control-plane bundle. Only vmID's own stored identities are loaded.
func (s *Store) TopologyForVM(ctx context.Context, vmID int64) (Topology, error) {
	return s.topology(ctx, vmID, RoleControlPlane, `n.kube_cluster_id = `+clusterOfVM("$3")+` AND n.role = $3`)
}

// WorkerForVM loads the cluster of the worker whose VM is vmID, that
// worker and the cluster's control-plane nodes (a worker's bundle routes
// their pod subnets), in one round trip; ErrNotFound when vmID is no
// worker's. Only the worker's own stored identities are loaded.
func (s *Store) WorkerForVM(ctx context.Context, vmID int64) (Topology, error) {
	return s.topology(ctx, vmID, RoleWorker, `(n.vm_id = $1 AND n.role = $3) OR
		(n.kube_cluster_id = `+clusterOfVM("$3")+` AND n.role = '`+RoleControlPlane+`')`)
}

// topology loads the cluster whose node of role has the VM vmID and the
// nodes nodesWhere selects ($1 the VM, $3 the role), with vmID's stored
// identities.
func (s *Store) topology(ctx context.Context, vmID int64, role, nodesWhere string) (Topology, error) {
	var t Topology
	var clusterErr, nodesErr error
	b := &pgx.Batch{}
	b.Queue(`SELECT `+clusterColumns+` FROM kube_clusters WHERE id = `+clusterOfVM("$2"), vmID, role).Query(func(rows pgx.Rows) error {
		t.Cluster, clusterErr = collectCluster(rows)
		return nil
	})
	b.Queue(nodesWithOwnIdentities(nodesWhere), vmID, vmID, role).Query(func(rows pgx.Rows) error {
		t.Nodes, nodesErr = collectNodes(rows)
		return nil
	})
	var crlErr error
	if role == RoleControlPlane { // in the same batch: a fetch costs no round trip more
		b.Queue(etcdCRLQuery, vmID).QueryRow(func(row pgx.Row) error {
			t.EtcdCRL, crlErr = scanEtcdCRL(row)
			return nil
		})
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if clusterErr != nil {
		return Topology{}, fmt.Errorf("loading cluster of vm %d: %w", vmID, notFound(clusterErr))
	}
	if err = cmp.Or(err, nodesErr, crlErr); err != nil {
		return Topology{}, fmt.Errorf("loading the topology of vm %d: %w", vmID, err)
	}
	return t, nil
}

// RecordWorkerSigned records that the worker whose VM is vmID had its
// certificate requests signed in its bootstrap window opened at window,
// and the certificates it was issued (their serials): false when they
// already were (once per window), or the window changed.
func (s *Store) RecordWorkerSigned(ctx context.Context, vmID int64, window time.Time, issued []Identity) (bool, error) {
	a := identityColumns(issued)
	var signed int
	err := s.pool.QueryRow(ctx, `WITH signed AS (
			UPDATE kube_nodes SET certs_signed_window = bootstrap_opened_at, certs_signed_at = now()
			WHERE vm_id = $1 AND role = 'worker' AND bootstrap_opened_at = $2
			  AND certs_signed_window IS DISTINCT FROM bootstrap_opened_at
			RETURNING id, kube_cluster_id
		), issued AS (
			`+recordIssued+` SELECT n.kube_cluster_id, n.id, u.name, u.serial
			FROM signed n, unnest($3::text[], $4::text[]) AS u (name, serial)
		)
		SELECT count(*) FROM signed`, vmID, window, a.names, a.serials).Scan(&signed)
	if err != nil {
		return false, fmt.Errorf("recording the signed requests of vm %d: %w", vmID, err)
	}
	return signed == 1, nil
}

// RecordIssued records the certificates issued to the node whose VM is
// vmID outside its stored identities (a worker's renewal): ErrNotFound
// when the VM is no node.
func (s *Store) RecordIssued(ctx context.Context, vmID int64, issued []Identity) error {
	a := identityColumns(issued)
	tag, err := s.pool.Exec(ctx, recordIssued+` SELECT n.kube_cluster_id, n.id, u.name, u.serial
		FROM kube_nodes n, unnest($2::text[], $3::text[]) AS u (name, serial) WHERE n.vm_id = $1
		ON CONFLICT DO NOTHING`, vmID, a.names, a.serials)
	if err == nil && tag.RowsAffected() == 0 && len(issued) > 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("recording the certificates issued to vm %d: %w", vmID, err)
	}
	return nil
}

// IssuedSerials is every serial recorded for the node's certificates, by
// identity name.
func (s *Store) IssuedSerials(ctx context.Context, nodeID int64) (map[string][]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT identity, serial FROM node_certificates WHERE node_id = $1`, nodeID)
	out := map[string][]string{}
	var name, serial string
	_, err := pgx.ForEachRow(rows, []any{&name, &serial}, func() error {
		out[name] = append(out[name], serial)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading the serials issued to node %d: %w", nodeID, err)
	}
	return out, nil
}

// DNSOutcome is what pointing the control-plane name did: whether the DNS
// API took it (else why not, for the operator), the node it was pointed at
// (its VM) and the record's TTL, at At.
type DNSOutcome struct {
	Configured bool
	Error      string
	VMID       int64
	TTLSeconds int
	At         time.Time
}

// SetDNS records the outcome of pointing the control-plane name. A name
// now at another node than recorded moved at o.At, with o.TTLSeconds; a
// refused move keeps the recorded node and notes o.At as the move's time
// all the same (store.rotationAsks waits out the TTL from it, then asks
// the node anyway: the name cannot be steered).
func (s *Store) SetDNS(ctx context.Context, clusterID int64, o DNSOutcome) error {
	_, err := s.pool.Exec(ctx, `UPDATE kube_clusters SET dns_configured = $2, dns_error = $3, updated_at = now(),
			endpoint_moved_at = CASE WHEN endpoint_vm_id IS DISTINCT FROM $4 THEN $6 ELSE endpoint_moved_at END,
			endpoint_ttl_seconds = CASE WHEN endpoint_vm_id IS DISTINCT FROM $4 THEN $5 ELSE endpoint_ttl_seconds END,
			endpoint_vm_id = CASE WHEN $2 THEN $4 ELSE endpoint_vm_id END
		WHERE id = $1`, clusterID, o.Configured, o.Error, o.VMID, o.TTLSeconds, o.At)
	if err != nil {
		return fmt.Errorf("recording dns outcome: %w", err)
	}
	return nil
}
