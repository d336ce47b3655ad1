package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Upgrade states (cluster_upgrades.state, migration 031): upgrading and
// aborting are driven by the reconciler under the lease of the upgrade's
// operation (KindUpgrade), paused waits on the operator, done and aborted
// are settled; the operation ends as the upgrade pauses or settles.
const (
	UpgradeUpgrading = "upgrading"
	UpgradePaused    = "paused"
	UpgradeAborting  = "aborting"
	UpgradeDone      = "done"
	UpgradeAborted   = "aborted"
)

// ErrUpgrading means an upgrade of the cluster is already live.
var ErrUpgrading = errors.New("an upgrade of the cluster is in progress")

// Upgrade is a cluster_upgrades row.
type Upgrade struct {
	ID                       int64  `db:"id"`
	ClusterID                int64  `db:"kube_cluster_id"`
	FromVersion              string `db:"from_version"`
	ToVersion                string `db:"to_version"`
	PassVersion              string `db:"pass_version"`
	Surge                    int    `db:"surge"`
	DrainTimeoutSeconds      int    `db:"drain_timeout_seconds"`
	DeprecatedAPIsOverridden bool   `db:"deprecated_apis_overridden"`
	RequestedBy              string `db:"requested_by"`
	State                    string `db:"state"`
	StateReason              string `db:"state_reason"`
	PausedNode               string `db:"paused_node"`
	SnapshotID               *int64 `db:"snapshot_id"`
	ReplacementID            *int64 `db:"replacement_id"`
	SurgePoolID              *int64 `db:"surge_pool_id"`
	SurgeBase                int    `db:"surge_base"`
	SurgeCount               int    `db:"surge_count"`
	// The addons step (migration 039): the node chosen to apply the
	// pass's addons and when it was chosen; the release whose addons it
	// reported applied, or why it could not.
	AddonsNode    string     `db:"addons_node"`
	AddonsAskedAt *time.Time `db:"addons_asked_at"`
	AddonsVersion string     `db:"addons_version"`
	AddonsFailure string     `db:"addons_failure"`
	CreatedAt     time.Time  `db:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at"`
}

const upgradeColumns = `id, kube_cluster_id, from_version, to_version, pass_version, surge, drain_timeout_seconds,
	deprecated_apis_overridden, requested_by, state, state_reason, paused_node, snapshot_id, replacement_id, surge_pool_id, surge_base, surge_count,
	addons_node, addons_asked_at, addons_version, addons_failure, created_at, updated_at`

// liveUpgradeStates are the states of an upgrade not yet settled.
const liveUpgradeStates = `('upgrading', 'paused', 'aborting')`

func oneUpgrade(rows pgx.Rows, what string) (Upgrade, error) { return oneRow[Upgrade](rows, what) }

// BeginUpgrade records u (its cluster active and of org) and begins its
// operation (held by no lease: the reconciler claims it at once) before
// any remote call. A cluster with a live upgrade, or any other live
// operation of the cluster itself: ErrUpgrading; with a live replacement:
// ErrReplacing.
func (s *Store) BeginUpgrade(ctx context.Context, orgID int64, u Upgrade) (Upgrade, error) {
	var out Upgrade
	err := s.inActiveCluster(ctx, orgID, u.ClusterID, func(tx pgx.Tx) error {
		var replacing bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM node_replacements WHERE kube_cluster_id = $1
			AND state IN ('replacing', 'failing'))`, u.ClusterID).Scan(&replacing); err != nil {
			return err
		}
		if replacing {
			return ErrReplacing
		}
		rows, _ := tx.Query(ctx, `WITH u AS (
				INSERT INTO cluster_upgrades (kube_cluster_id, from_version, to_version, pass_version, surge,
				drain_timeout_seconds, deprecated_apis_overridden, requested_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				RETURNING *
			), op AS (
				INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, spec)
				SELECT '`+KindUpgrade+`', $1, '`+TargetCluster+`', $1, 'running', '`+ReasonInProgress+`',
					jsonb_build_object('upgrade_id', u.id) FROM u
			)
			SELECT `+upgradeColumns+` FROM u`, u.ClusterID, u.FromVersion, u.ToVersion, u.PassVersion, u.Surge,
			u.DrainTimeoutSeconds, u.DeprecatedAPIsOverridden, u.RequestedBy)
		var err error
		out, err = oneUpgrade(rows, "recording the upgrade")
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.ConstraintName == "cluster_upgrades_one_live" || pgErr.ConstraintName == "operations_one_live") {
			return ErrUpgrading
		}
		return err
	})
	if err != nil {
		return out, fmt.Errorf("beginning the upgrade of cluster %d: %w", u.ClusterID, err)
	}
	return out, nil
}

// upgradeHoldsOff is ErrUpgrading for an operator's pool change (c) while
// an upgrade of its cluster runs: the upgrade's surge counts the pool's
// workers.
func upgradeHoldsOff(ctx context.Context, tx pgx.Tx, c PoolChange) error {
	if !c.ByOperator {
		return nil
	}
	var running bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM operations WHERE kube_cluster_id = $1 AND kind = '`+KindUpgrade+`'
		AND ended_at IS NULL)`, c.Pool.ClusterID).Scan(&running)
	if err == nil && running {
		err = ErrUpgrading
	}
	return err
}

// LiveUpgrade is the cluster's upgrade not yet settled: ErrNotFound when
// there is none.
func (s *Store) LiveUpgrade(ctx context.Context, clusterID int64) (Upgrade, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+upgradeColumns+` FROM cluster_upgrades
		WHERE kube_cluster_id = $1 AND state IN `+liveUpgradeStates, clusterID)
	return oneUpgrade(rows, fmt.Sprintf("loading the live upgrade of cluster %d", clusterID))
}

// LatestUpgrade is the cluster's newest upgrade of any state: ErrNotFound
// when it has had none.
func (s *Store) LatestUpgrade(ctx context.Context, clusterID int64) (Upgrade, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+upgradeColumns+` FROM cluster_upgrades
		WHERE kube_cluster_id = $1 ORDER BY id DESC LIMIT 1`, clusterID)
	return oneUpgrade(rows, fmt.Sprintf("loading the upgrades of cluster %d", clusterID))
}

// MoveUpgrade moves the cluster's live upgrade from one of from to state
// to, with reason and node (an operator's resume or abort: no lease is
// held, as no driver runs a paused upgrade; a driven one moves under the
// driver's fence, RecordUpgrade), and begins its operation again if a
// pause ended it; the failed replacement that paused it, if one did, is
// no longer its own, and the addons step chooses its node again. ErrNotFound: no live upgrade in from.
func (s *Store) MoveUpgrade(ctx context.Context, clusterID int64, from []string, to, reason string) (Upgrade, error) {
	rows, _ := s.pool.Query(ctx, `WITH u AS (
			UPDATE cluster_upgrades SET state = $3, state_reason = $4, paused_node = '', replacement_id = NULL,
				addons_node = '', addons_asked_at = NULL, addons_failure = '', updated_at = now()
			WHERE kube_cluster_id = $1 AND state = ANY($2) RETURNING *
		), op AS (
			INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, spec)
			SELECT '`+KindUpgrade+`', $1, '`+TargetCluster+`', $1, 'running', '`+ReasonInProgress+`',
				jsonb_build_object('upgrade_id', u.id) FROM u
			ON CONFLICT (target_type, target_id) WHERE ended_at IS NULL DO NOTHING
		)
		SELECT `+upgradeColumns+` FROM u`, clusterID, from, to, reason)
	return oneUpgrade(rows, fmt.Sprintf("moving the upgrade of cluster %d to %s", clusterID, to))
}

// UpgradeChange is what a driver records of its upgrade, fenced by the
// lease of the upgrade's operation (opHeld) and by the state the driver loaded (Was: an operator's
// abort meanwhile stops the driver): each field as it is now.
type UpgradeChange struct {
	Was                 string
	State, Reason, Node string
	PassVersion         string
	SnapshotID          *int64
	ReplacementID       *int64
	SurgePoolID         *int64
	SurgeBase           int
	SurgeCount          int
	// AddonsNode and AddonsAskedAt: the addons step's choice;
	// AddonsFailure, when not nil, the failure as it is now (nil keeps the
	// recorded one: the chosen node's report writes it).
	AddonsNode    string
	AddonsAskedAt *time.Time
	AddonsFailure *string
}

// RecordUpgrade writes c into the owner's upgrade id of the cluster. An
// upgrade that c pauses or settles ends its operation in the same
// statement (a paused one is begun again by MoveUpgrade): no driver holds
// it from here, and nothing of the cluster waits on it.
func (s *Store) RecordUpgrade(ctx context.Context, clusterID int64, owner string, id int64, c UpgradeChange) error {
	return s.fencedCount(ctx, "recording the upgrade", `WITH u AS (
			UPDATE cluster_upgrades u SET state = $4, state_reason = $5, paused_node = $6,
			pass_version = $7, snapshot_id = $8, replacement_id = $9, surge_pool_id = $11, surge_base = $12, surge_count = $13,
			addons_node = $16, addons_asked_at = $17, addons_failure = coalesce($18, u.addons_failure), updated_at = now()
			WHERE u.id = $3 AND u.kube_cluster_id = $1 AND u.state = $10
			AND EXISTS (SELECT 1 FROM kube_clusters WHERE `+leaseHeld+`) RETURNING u.id
		), ended AS (
			UPDATE operations o SET state = $15, reason = $14, message = $5, lease_owner = NULL, lease_until = NULL,
				updated_at = now(), ended_at = now()
			FROM u WHERE o.kube_cluster_id = $1 AND o.lease_owner = $2 AND o.ended_at IS NULL AND $14 <> ''
		)
		SELECT count(*) FROM u`,
		clusterID, owner, id, c.State, c.Reason, c.Node, c.PassVersion, c.SnapshotID, c.ReplacementID, c.Was,
		c.SurgePoolID, c.SurgeBase, c.SurgeCount, upgradeEndReason[c.State], endedState(upgradeEndReason[c.State]),
		c.AddonsNode, c.AddonsAskedAt, c.AddonsFailure)
}

// upgradeEndReason is the reason the operation of an upgrade ends with
// as it moves to a state no driver runs (absent: it goes on).
var upgradeEndReason = map[string]string{
	UpgradePaused:  ReasonPaused,
	UpgradeDone:    ReasonSucceeded,
	UpgradeAborted: ReasonAborted,
}

// SetClusterVersion records that every API server of the owner's cluster
// is at version, with the artifact set its nodes use from now on.
func (s *Store) SetClusterVersion(ctx context.Context, clusterID int64, owner, version string, artifacts []byte) error {
	var record *string // nil: a cluster founded before records keeps none
	if artifacts != nil {
		doc := string(artifacts)
		record = &doc
	}
	return s.fenced(ctx, "recording the cluster's version", `UPDATE kube_clusters SET kubernetes_version = $3,
		artifacts = $4::jsonb, updated_at = now() WHERE `+leaseHeld, clusterID, owner, version, record)
}

// ReplacementByID is one replacement of the cluster.
func (s *Store) ReplacementByID(ctx context.Context, clusterID, id int64) (Replacement, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+replacementColumns+` FROM node_replacements WHERE kube_cluster_id = $1 AND id = $2`, clusterID, id)
	return oneRow[Replacement](rows, fmt.Sprintf("loading replacement %d", id))
}

// SnapshotByID is one etcd snapshot of the cluster, of any state.
func (s *Store) SnapshotByID(ctx context.Context, clusterID, id int64) (EtcdSnapshot, error) {
	var row snapshotRow
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT row_to_json(s) FROM etcd_snapshots s WHERE kube_cluster_id = $1 AND id = $2`,
		clusterID, id).Scan(&raw)
	if err == nil {
		err = json.Unmarshal(raw, &row)
	}
	if err != nil {
		return EtcdSnapshot{}, fmt.Errorf("loading snapshot %d: %w", id, notFound(err))
	}
	return row.snapshot(), nil
}

// RetirePoolWorkers begins the pool operation that removes the workers of
// ordinals (an upgrade's old ones, once as many new ones are ready) and
// sets the pool's count to c.Pool.Count, as BeginPoolOperation begins a
// scale-down but retiring the workers named rather than the newest, and
// ends upgrade's surge of the pool, in one transaction fenced by the
// lease of the upgrade's operation (owner): a cut-off never retires without ending the
// surge, nor ends it without retiring.
func (s *Store) RetirePoolWorkers(ctx context.Context, c PoolChange, ordinals []int, upgrade int64, owner string) (Pool, error) {
	var out Pool
	err := s.inActiveCluster(ctx, c.OrgID, c.Pool.ClusterID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cluster_upgrades u SET surge_pool_id = NULL, surge_base = 0, surge_count = 0, updated_at = now()
			WHERE u.id = $3 AND u.kube_cluster_id = $1 AND u.state = 'upgrading'
			AND EXISTS (SELECT 1 FROM kube_clusters WHERE `+leaseHeld+`)`, c.Pool.ClusterID, owner, upgrade)
		if err == nil && tag.RowsAffected() == 0 {
			err = ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if out, err = upsertPool(ctx, tx, c); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE kube_nodes SET retiring = true WHERE node_pool_id = $1 AND ordinal = ANY($2)`, out.ID, ordinals)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("retiring workers of node pool %q: %w", c.Pool.Name, err)
	}
	return out, nil
}
