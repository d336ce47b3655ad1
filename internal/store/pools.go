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

// Pool states (node_pools.state, migration 017). Creating, scaling,
// deleting and failing are operations a lease drives; the others are
// settled.
const (
	PoolCreating = "creating"
	PoolActive   = "active"
	PoolScaling  = "scaling"
	PoolDeleting = "deleting"
	PoolFailing  = "failing" // a create being undone: its workers are retired
	PoolFailed   = "failed"
	PoolDeleted  = "deleted"
)

// ErrNameTaken means a live pool of the cluster already has the name.
var ErrNameTaken = errors.New("a live node pool of the cluster has this name")

// ErrClusterNotActive means the pool's cluster is not active (founding,
// failed, being deleted): no pool of it may start an operation.
var ErrClusterNotActive = errors.New("the cluster is not active")

// Taint is one taint a pool's Nodes carry.
type Taint struct {
	Key    string
	Value  string
	Effect string
}

// taintJSON is a taint as node_pools.taints holds it, a jsonb array of
// these: the column's shape, not the API's (which happens to match). A
// read decodes the array into Taint by encoding/json's case-insensitive
// match of the one-word keys.
type taintJSON struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// taintsJSON is taints in the column's shape.
func taintsJSON(taints []Taint) []taintJSON {
	out := make([]taintJSON, len(taints))
	for i, t := range taints {
		out[i] = taintJSON(t)
	}
	return out
}

// Pool is a node_pools row, with its cluster's org.
type Pool struct {
	ID                 int64             `db:"id"`
	ClusterID          int64             `db:"kube_cluster_id"`
	OrgID              int64             `db:"org_id"`
	Name               string            `db:"name"`
	Count              int               `db:"count"`
	InstanceType       string            `db:"instance_type"`
	ImageID            int64             `db:"image_id"`
	SubnetID           int64             `db:"subnet_id"`
	Labels             map[string]string `db:"labels"`
	Taints             []Taint           `db:"taints"`
	State              string            `db:"state"`
	StateReason        string            `db:"state_reason"` // its latest operation's message
	IdempotencyKey     *string           `db:"idempotency_key"`
	RequestFingerprint *string           `db:"request_fingerprint"`
	CreatedAt          time.Time         `db:"created_at"`
	UpdatedAt          time.Time         `db:"updated_at"`
	// LastOp is the pool's latest operation (migration 025).
	LastOp *OpRecord `db:"last_op"`
}

var poolColumns = `id, kube_cluster_id, (SELECT org_id FROM kube_clusters k WHERE k.id = kube_cluster_id) AS org_id,
	name, count, instance_type, image_id, subnet_id, labels, taints, state, idempotency_key,
	request_fingerprint, created_at, updated_at, ` + lastOp(TargetNodePool, "node_pools.id", "state_reason")

// poolOpHeld is the fence of a pool operation's writes: a live operation
// of the pool $1 is held by owner $2.
const poolOpHeld = `EXISTS (SELECT 1 FROM operations o WHERE o.target_type = '` + TargetNodePool + `' AND o.target_id = $1
	AND o.lease_owner = $2 AND o.ended_at IS NULL)`

// poolLeaseHeld is poolOpHeld over node_pools p.
const poolLeaseHeld = `p.id = $1 AND ` + poolOpHeld

// poolOpOf names the live operation of the pool moved (a CTE of its id)
// held by owner $2.
const poolOpOf = `o.target_type = '` + TargetNodePool + `' AND o.target_id = moved.id AND o.lease_owner = $2 AND o.ended_at IS NULL`

func collectPools(rows pgx.Rows) ([]Pool, error) {
	return pgx.CollectRows(rows, pgx.RowToStructByName[Pool])
}

func onePool(rows pgx.Rows, what string) (Pool, error) { return oneRow[Pool](rows, what) }

// PoolByName returns the cluster's live (not deleted) pool called name.
func (s *Store) PoolByName(ctx context.Context, clusterID int64, name string) (Pool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+poolColumns+` FROM node_pools
		WHERE kube_cluster_id = $1 AND name = $2 AND state <> 'deleted'`, clusterID, name)
	return onePool(rows, "loading node pool "+name)
}

// PoolByID returns one pool, whatever its state.
func (s *Store) PoolByID(ctx context.Context, id int64) (Pool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+poolColumns+` FROM node_pools WHERE id = $1`, id)
	return onePool(rows, fmt.Sprintf("loading node pool %d", id))
}

// PoolByIdempotencyKey returns the pool a committed create recorded under key.
func (s *Store) PoolByIdempotencyKey(ctx context.Context, clusterID int64, key string) (Pool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+poolColumns+` FROM node_pools
		WHERE kube_cluster_id = $1 AND idempotency_key = $2`, clusterID, key)
	return onePool(rows, "loading node pool by idempotency key")
}

// PoolNodes returns a pool's workers by ordinal, retiring ones included.
func (s *Store) PoolNodes(ctx context.Context, poolID int64) ([]Node, error) {
	return s.nodes(ctx, `n.node_pool_id = $1`, poolID)
}

// PoolChange is the start of a pool operation: the pool goes to State,
// held by Lease, with Count workers intended (new rows named by Name) or
// the highest ordinals beyond Count retiring. For a new pool (Pool.ID 0)
// the row is inserted; for an existing one, only from a state in From and
// while no live lease holds it.
type PoolChange struct {
	OrgID int64
	Pool  Pool
	State string
	From  []string
	Lease Lease
	Now   time.Time
	Name  func(ordinal int) string
	// ByOperator: an operator's change, held off (ErrUpgrading) while an
	// upgrade of the cluster runs (its own pool changes are not).
	ByOperator bool
}

// BeginPoolOperation commits a pool operation before any remote call, in
// one transaction that locks the pool's cluster (active, of the org): the
// pool row and its intended or retiring workers. A new pool whose
// idempotency key the cluster already used: ErrDuplicate; whose name a
// live pool has: ErrNameTaken. An existing pool that is busy or in no
// state of From: ErrLeaseLost. An operator's change while an upgrade of
// the cluster runs: ErrUpgrading (BeginUpgrade locks the same cluster row).
func (s *Store) BeginPoolOperation(ctx context.Context, c PoolChange) (Pool, error) {
	out, err := s.beginPool(ctx, c, nil)
	if err != nil {
		return out, fmt.Errorf("beginning an operation of node pool %q: %w", c.Pool.Name, err)
	}
	return out, nil
}

// beginPool is BeginPoolOperation's transaction; first (nil: nothing)
// changes the pool's workers before they converge on its count.
func (s *Store) beginPool(ctx context.Context, c PoolChange, first func(pgx.Tx, Pool) error) (Pool, error) {
	var out Pool
	err := s.inActiveCluster(ctx, c.OrgID, c.Pool.ClusterID, func(tx pgx.Tx) error {
		err := upgradeHoldsOff(ctx, tx, c)
		if err != nil {
			return err
		}
		if out, err = upsertPool(ctx, tx, c); err != nil {
			return err
		}
		if first != nil {
			if err := first(tx, out); err != nil {
				return err
			}
		}
		return convergeWorkers(ctx, tx, out, c.Name)
	})
	return out, err
}

// inActiveCluster runs f in a transaction that holds the row of org's
// cluster locked, the cluster active (ErrClusterNotActive otherwise).
func (s *Store) inActiveCluster(ctx context.Context, orgID, clusterID int64, f func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockActiveCluster(ctx, tx, orgID, clusterID); err != nil {
			return err
		}
		return f(tx)
	})
}

// lockActiveCluster locks the cluster's row for the transaction, so the
// ordinals it hands out and its status hold until commit.
func lockActiveCluster(ctx context.Context, tx pgx.Tx, orgID, clusterID int64) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM kube_clusters WHERE org_id = $1 AND id = $2 FOR UPDATE`,
		orgID, clusterID).Scan(&status)
	if err != nil {
		return notFound(err)
	}
	if status != StatusActive {
		return ErrClusterNotActive
	}
	return nil
}

// upsertPool inserts a new pool or moves an existing one to c.State, and
// begins its operation under c.Lease.
func upsertPool(ctx context.Context, tx pgx.Tx, c PoolChange) (Pool, error) {
	id, err := movePoolRow(ctx, tx, c)
	if err != nil {
		return Pool{}, err
	}
	if _, err := tx.Exec(ctx, `WITH ended AS (
			UPDATE operations o SET state = 'failed', reason = '`+ReasonSuperseded+`', lease_owner = NULL, lease_until = NULL,
				updated_at = now(), ended_at = now()
			WHERE o.target_type = '`+TargetNodePool+`' AND o.target_id = $2 AND o.ended_at IS NULL RETURNING o.id
		)
		INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, lease_owner, lease_until, spec)
		SELECT '`+KindNodePool+`', $1, '`+TargetNodePool+`', $2, 'running', '`+ReasonInProgress+`', $3, $4,
			jsonb_build_object('count', $5::int, 'state', $6::text)
		FROM (SELECT count(*) FROM ended) e`, c.Pool.ClusterID, id, c.Lease.Owner, c.Lease.Until, c.Pool.Count, c.State); err != nil {
		return Pool{}, err
	}
	rows, _ := tx.Query(ctx, `SELECT `+poolColumns+` FROM node_pools WHERE id = $1`, id)
	return onePool(rows, "loading the pool")
}

// movePoolRow inserts c's new pool, or moves its existing one to c.State
// from a state of c.From while no live lease holds it: the pool's id.
func movePoolRow(ctx context.Context, tx pgx.Tx, c PoolChange) (int64, error) {
	p := c.Pool
	var id int64
	if p.ID != 0 {
		err := tx.QueryRow(ctx, `UPDATE node_pools SET count = $2, state = $3, updated_at = now()
			WHERE id = $1 AND state = ANY($4) AND NOT EXISTS (SELECT 1 FROM operations o
				WHERE o.target_type = '`+TargetNodePool+`' AND o.target_id = $1 AND o.ended_at IS NULL AND o.lease_until >= $5)
			RETURNING id`, p.ID, p.Count, c.State, c.From, c.Now).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, ErrLeaseLost
		}
		return id, err
	}
	err := tx.QueryRow(ctx, `INSERT INTO node_pools (kube_cluster_id, name, count, instance_type, image_id, subnet_id,
		labels, taints, state, idempotency_key, request_fingerprint)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11)
		ON CONFLICT (kube_cluster_id, idempotency_key) DO NOTHING
		RETURNING id`, p.ClusterID, p.Name, p.Count, p.InstanceType, p.ImageID, p.SubnetID,
		jsonText(p.Labels), jsonText(taintsJSON(p.Taints)), c.State, p.IdempotencyKey, p.RequestFingerprint).Scan(&id)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, ErrDuplicate
	case errors.As(err, &pgErr) && pgErr.ConstraintName == "node_pools_live_name":
		return 0, ErrNameTaken
	}
	return id, err
}

// convergeWorkers intends new workers, or marks the highest ordinals
// retiring, until the pool has p.Count workers that are not retiring.
// New ordinals follow every ordinal the cluster handed out (takeOrdinals).
func convergeWorkers(ctx context.Context, tx pgx.Tx, p Pool, name func(int) string) error {
	rows, _ := tx.Query(ctx, `SELECT ordinal FROM kube_nodes WHERE node_pool_id = $1 AND NOT retiring ORDER BY ordinal`, p.ID)
	live, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return err
	}
	if len(live) > p.Count {
		_, err = tx.Exec(ctx, `UPDATE kube_nodes SET retiring = true WHERE node_pool_id = $1 AND ordinal = ANY($2)`,
			p.ID, live[p.Count:])
		return err
	}
	if len(live) == p.Count {
		return nil
	}
	first, err := takeOrdinals(ctx, tx, p.ClusterID, p.Count-len(live))
	if err != nil {
		return err
	}
	var ordinals []int
	var names []string
	for o := first; o < first+p.Count-len(live); o++ {
		ordinals, names = append(ordinals, o), append(names, name(o))
	}
	_, err = tx.Exec(ctx, `INSERT INTO kube_nodes (kube_cluster_id, ordinal, node_name, role, node_pool_id)
		SELECT $1, u.ordinal, u.name, 'worker', $2 FROM unnest($3::int[], $4::text[]) AS u (ordinal, name)`,
		p.ClusterID, p.ID, ordinals, names)
	return err
}

// takeOrdinals hands out n ordinals of the cluster, whose row the
// transaction holds locked, and answers the first: they follow the
// cluster's high-water mark (migration 022), never the rows that still
// exist, so a removed node's name (which its certificates carry for a
// year) is never another node's. The rows are counted too, for a row
// written before the mark was kept.
func takeOrdinals(ctx context.Context, tx pgx.Tx, clusterID int64, n int) (int, error) {
	var first int
	err := tx.QueryRow(ctx, `UPDATE kube_clusters k SET last_ordinal = greatest(k.last_ordinal,
			(SELECT coalesce(max(ordinal), 0) FROM kube_nodes WHERE kube_cluster_id = k.id)) + $2
		WHERE id = $1 RETURNING last_ordinal - $2 + 1`, clusterID, n).Scan(&first)
	return first, err
}

// DeleteRetired deletes the rows of the retiring workers at ordinals, whose
// VMs are gone.
func (s *Store) DeleteRetired(ctx context.Context, f Fence, ordinals []int) error {
	return s.fenced(ctx, "deleting retired workers of "+f.what, `DELETE FROM kube_nodes n USING unnest($3::int[]) AS u (ordinal)
		WHERE `+f.nodes+` AND n.ordinal = u.ordinal AND n.retiring AND EXISTS (`+f.held+`)`, f.id, f.owner, ordinals)
}

// SettlePool ends the owner's pool operation in state (active, failed or
// deleted) with reason, and its count (nil: unchanged). An operation that
// settles with a reason did not do what was asked (a create undone, a
// scale turned back): it ends failed.
func (s *Store) SettlePool(ctx context.Context, poolID int64, owner, state, reason string, count *int) error {
	ended := PoolSettledReason(state, reason)
	return s.fenced(ctx, "settling the node pool", `WITH moved AS (
			UPDATE node_pools p SET state = $3, count = coalesce($5, count), updated_at = now()
			WHERE `+poolLeaseHeld+` RETURNING p.id
		)
		UPDATE operations o SET state = $6, reason = $7, message = $4, lease_owner = NULL, lease_until = NULL,
			updated_at = now(), ended_at = now()
		FROM moved WHERE `+poolOpOf, poolID, owner, state, reason, count, endedState(ended), ended)
}

// PoolSettledReason is the reason a pool operation ends with when it
// settles the pool in state with reason.
func PoolSettledReason(state, reason string) string {
	if state == PoolFailed || reason != "" {
		return ReasonFailed
	}
	return ReasonSucceeded
}

// PoolMove moves a pool operation on: its state and reason, its count
// (nil: unchanged), the workers at Retire to be removed, and its lease's
// end (now: the reconciler takes it over at its next run).
type PoolMove struct {
	State, Reason string
	Count         *int
	Retire        []int
	Until         time.Time
	Step          string // the step it stands at ("": none)
}

// MovePool moves the owner's pool operation as m says, in one statement.
func (s *Store) MovePool(ctx context.Context, poolID int64, owner string, m PoolMove) error {
	reason := runningReason(m.Reason)
	if m.State == PoolFailing {
		reason = ReasonTurningBack
	}
	var moved bool
	err := s.pool.QueryRow(ctx, `WITH moved AS (
			UPDATE node_pools p SET state = $3, count = coalesce($5, count), updated_at = now()
			WHERE `+poolLeaseHeld+` RETURNING p.id
		), op AS (
			UPDATE operations o SET reason = $8, message = $4, lease_until = $6, step = $9, updated_at = now()
			FROM moved WHERE `+poolOpOf+`
		), retired AS (
			UPDATE kube_nodes n SET retiring = true FROM moved WHERE n.node_pool_id = moved.id AND n.ordinal = ANY($7)
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM moved)`, poolID, owner, m.State, m.Reason, m.Count, m.Until, m.Retire, reason, m.Step).Scan(&moved)
	if err == nil && !moved {
		err = ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("moving node pool %d to %s: %w", poolID, m.State, err)
	}
	return nil
}

// jsonText is v as a JSON document's text: the statement's parameter types
// are taken from the Go values (the exec mode describes nothing), and a
// map or a slice of structs has none.
func jsonText(v any) string {
	b, _ := json.Marshal(v) // maps of strings and slices of plain structs cannot fail to marshal
	return string(b)
}
