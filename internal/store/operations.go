package store

import (
	"context"
	"fmt"
	"time"
)

// The kinds of operation (operations.kind, migration 025). A kind to come
// (an upgrade, a remediation) is one name here, the
// target it acts on, and its handler in the reconciler's table: its begin
// statement inserts a row with beginOperation, its writes are fenced by
// opHeld, it ends with endOperation; the claim, the live-operation check
// and the conditions read it with no change.
const (
	KindFounding        = "founding"         // target: the cluster
	KindDeletion        = "deletion"         // target: the cluster
	KindNodePool        = "node-pool"        // target: the pool (create, scale, delete, an undone create)
	KindNodeReplacement = "node-replacement" // target: the replacement row
	// KindControlPlaneScaling's target is the cluster; its spec holds
	// from_count and to_count (migration 029).
	KindControlPlaneScaling = "control-plane-scaling"
	KindUpgrade             = "upgrade" // target: the cluster (its cluster_upgrades row: the spec and progress)
)

// The targets an operation acts on (operations.target_type).
const (
	TargetCluster         = "cluster"
	TargetNodePool        = "node_pool"
	TargetNodeReplacement = "node_replacement"
)

// Operation states (operations.state): running until it ends.
const (
	OpRunning   = "running"
	OpSucceeded = "succeeded"
	OpFailed    = "failed"
)

// Typed reasons (operations.reason): why an operation stands where it
// stands, as a Cluster-API-style condition's reason says it.
const (
	ReasonInProgress  = "InProgress"  // running, nothing went wrong
	ReasonRetrying    = "Retrying"    // running, a step failed and is retried (message: why)
	ReasonTurningBack = "TurningBack" // running, undoing what a failed step left
	ReasonSucceeded   = "Succeeded"
	ReasonFailed      = "Failed"     // ended without doing what was asked (message: why)
	ReasonSuperseded  = "Superseded" // ended by a newer operation of its target (a cluster's deletion)
	ReasonPaused      = "Paused"     // ended as its gate failed, waiting on the operator (an upgrade; resumed, it begins again)
	ReasonAborted     = "Aborted"    // ended turned back by the operator (an upgrade; a CA rotation before its distrust)
)

// DeletionTakesOver are the kinds whose live operation a cluster's
// deletion may go ahead of once its lease ran out (its driver died): the
// teardown deletes whatever they made. Any other live operation (a
// replacement or a control-plane scaling, whose new VM only it knows how
// to finish) holds the deletion off until it ends. A CA rotation's
// generations are shredded with the rest of the cluster's keys.
var DeletionTakesOver = []string{KindFounding, KindDeletion, KindNodePool, KindCARotation}

// Operation is an operations row as the reconciler claims it: which kind,
// on which target of which cluster (and org).
type Operation struct {
	ID         int64
	Kind       string
	ClusterID  int64
	OrgID      int64
	TargetID   int64
	LeaseUntil *time.Time
}

// OpRecord is a resource's latest operation as its conditions show it
// (nil: none, a resource older than its kind's first operation). It is
// decoded from a JSON column (lastOp), hence the tags: the column's shape,
// not the API's.
type OpRecord struct {
	Kind      string     `json:"kind"`
	State     string     `json:"state"`
	Reason    string     `json:"reason"`
	Message   string     `json:"message"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	EndedAt   *time.Time `json:"ended_at"`
}

// Ended is o as it ends at with reason (nil: nil), for an answer made
// without reading the row again.
func (o *OpRecord) Ended(reason string, at time.Time) *OpRecord {
	if o == nil {
		return nil
	}
	e := *o
	e.State, e.Reason, e.EndedAt = endedState(reason), reason, &at
	return &e
}

// Live says whether the operation has not ended.
func (o *OpRecord) Live() bool { return o != nil && o.State == OpRunning }

// lastOp is the columns of the latest operation of the target (type, id
// over the outer row): the whole as one JSON value named last_op, and its
// message named reasonColumn.
func lastOp(targetType, id, reasonColumn string) string {
	from := `FROM operations o WHERE o.target_type = '` + targetType + `' AND o.target_id = ` + id + ` ORDER BY o.id DESC LIMIT 1`
	return `(SELECT jsonb_build_object('kind', o.kind, 'state', o.state, 'reason', o.reason, 'message', o.message,
		'created_at', o.created_at, 'updated_at', o.updated_at, 'ended_at', o.ended_at) ` + from + `) AS last_op,
		coalesce((SELECT o.message ` + from + `), '') AS ` + reasonColumn
}

// opHeld is the fence of every write of an operation: a live operation of
// the cluster ($1, or the cluster column cluster) is held by the lease
// owner $2. A lease owner is a fresh random name per lease, so it names
// one operation.
func opHeld(cluster string) string {
	return `EXISTS (SELECT 1 FROM operations o WHERE o.kube_cluster_id = ` + cluster + ` AND o.lease_owner = $2 AND o.ended_at IS NULL)`
}

// liveOpsOf is the FROM and WHERE of the one "no live operation on this
// cluster" check: the operations of the cluster (the SQL expression
// cluster) that have not ended. A cluster's deletion (BeginDeleting)
// narrows it to the ones that hold a deletion off; the remediation sweep
// (ClusterOperations) waits for every one.
func liveOpsOf(cluster string) string {
	return `FROM operations o WHERE o.kube_cluster_id = ` + cluster + ` AND o.ended_at IS NULL`
}

// runningReason is the reason of a running operation that says message.
func runningReason(message string) string {
	if message == "" {
		return ReasonInProgress
	}
	return ReasonRetrying
}

// endedState is the state of an operation ending with reason.
func endedState(reason string) string {
	if reason == ReasonSucceeded {
		return OpSucceeded
	}
	return OpFailed
}

// endedReason is the reason of a cluster operation that ends the
// cluster in status.
func endedReason(status string) string {
	if status == StatusFailed {
		return ReasonFailed
	}
	return ReasonSucceeded
}

// leaseExpiry is when a live operation's lease runs out, -infinity for
// one no driver took yet: the claim's one range and order over the
// running operations, which is migration 038's index (a condition of "no
// lease, or a lease before now" bounded no index, so every claim read and
// sorted every live operation).
const leaseExpiry = `coalesce(lease_until, '-infinity'::timestamptz)`

// ClaimDue takes over the oldest due operation of any kind, if any: one
// that is live and whose lease ran out (its driver died or let go) or
// that no driver took yet; ErrNotFound when there is none. It is held by
// lease from here. The row lock is held only for this statement; SKIP
// LOCKED lets reconcilers running side by side claim different
// operations instead of queueing.
func (s *Store) ClaimDue(ctx context.Context, lease Lease, now time.Time) (Operation, error) {
	var op Operation
	err := s.pool.QueryRow(ctx, `UPDATE operations SET lease_owner = $1, lease_until = $2, updated_at = now()
		WHERE id = (SELECT id FROM operations WHERE state = '`+OpRunning+`' AND `+leaseExpiry+` < $3
			ORDER BY `+leaseExpiry+`, id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, kind, kube_cluster_id, (SELECT org_id FROM kube_clusters k WHERE k.id = kube_cluster_id), target_id`,
		lease.Owner, lease.Until, now).Scan(&op.ID, &op.Kind, &op.ClusterID, &op.OrgID, &op.TargetID)
	if err != nil {
		return op, fmt.Errorf("claiming a due operation: %w", notFound(err))
	}
	op.LeaseUntil = &lease.Until
	return op, nil
}

// ReleaseLease lets go of the owner's operation until until (now: the
// reconciler takes it over at its next run), leaving it as it stands at
// step.
func (s *Store) ReleaseLease(ctx context.Context, clusterID int64, owner string, until time.Time, step string) error {
	return s.fenced(ctx, "releasing the operation", `UPDATE operations SET lease_until = $3, step = $4, updated_at = now()
		WHERE kube_cluster_id = $1 AND lease_owner = $2 AND ended_at IS NULL`, clusterID, owner, until, step)
}

// OperationsOf is every operation of the cluster, oldest first: what the
// migrate-forward test reads back.
func (s *Store) OperationsOf(ctx context.Context, clusterID int64) ([]OpTarget, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, target_type, target_id, state, step, reason, message, lease_owner IS NOT NULL
		FROM operations WHERE kube_cluster_id = $1 ORDER BY id`, clusterID)
	if err != nil {
		return nil, fmt.Errorf("loading the operations of cluster %d: %w", clusterID, err)
	}
	defer rows.Close()
	var out []OpTarget
	for rows.Next() {
		var o OpTarget
		if err := rows.Scan(&o.Kind, &o.TargetType, &o.TargetID, &o.State, &o.Step, &o.Reason, &o.Message, &o.Leased); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// OpTarget is one operation of a cluster as OperationsOf reads it.
type OpTarget struct {
	Kind, TargetType string
	TargetID         int64
	State, Step      string
	Reason, Message  string
	Leased           bool
}
