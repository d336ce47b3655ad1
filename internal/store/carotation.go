package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// KindCARotation's target is the cluster; its phase and roots are its
// ca_rotations row (migration 034).
const KindCARotation = "ca-rotation"

// RootServiceAccount is the service-account signer as a root of trust
// (ca_generations.root); the CAs are named by the cert table (pki.Name).
const RootServiceAccount = "service-account"

// Generation states (ca_generations.state).
const (
	GenNext     = "next"     // trusted, signs nothing yet
	GenCurrent  = "current"  // trusted, signs
	GenPrevious = "previous" // trusted, signs nothing any more
	GenRetired  = "retired"  // trusted by nothing; its sealed key overwritten
)

// Rotation phases (ca_rotations.phase).
const (
	PhaseTrusting    = "trusting"
	PhaseSigning     = "signing"
	PhaseDistrusting = "distrusting"
	PhaseDone        = "done"
	PhaseUntrusting  = "untrusting" // an abort: the next generations step back
	PhaseAborted     = "aborted"
)

// ErrRotationBusy means another operation of the cluster is live.
var ErrRotationBusy = errors.New("another operation of the cluster is in progress")

// ErrPhaseMoved means the rotation's phase is no longer the one a move
// started from (an abort was recorded meanwhile).
var ErrPhaseMoved = errors.New("the CA rotation's phase moved meanwhile")

// ErrTooLateToAbort means the rotation's old roots are distrusted already.
var ErrTooLateToAbort = errors.New("the rotation is past its distrust")

// CAGeneration is one generation of a root (a ca_generations row, or a
// root's kube_clusters columns as generation 1 when it has no row). It is
// decoded from a JSON column (caGenerationsColumn), hence the tags.
type CAGeneration struct {
	Root       string     `json:"root"`
	Generation int        `json:"generation"`
	State      string     `json:"state"`
	Cert       string     `json:"cert"` // the signer's public key for service-account
	KeySealed  []byte     `json:"key_sealed"`
	NotAfter   *time.Time `json:"not_after"`
}

// Rotation is a cluster's CA rotation (its ca_rotations row and its
// operation's state), decoded from a JSON column (caRotationColumn).
type Rotation struct {
	ID                  int64      `json:"operation_id"`
	Roots               []string   `json:"roots"`
	Phase               string     `json:"phase"`
	PhaseBeganAt        time.Time  `json:"phase_began_at"`
	SigningBeganAt      *time.Time `json:"signing_began_at"`
	DistrustWaitSeconds int        `json:"distrust_wait_seconds"`
	State               string     `json:"state"`
	Reason              string     `json:"reason"`
	Message             string     `json:"message"`
	CreatedAt           time.Time  `json:"created_at"`
	EndedAt             *time.Time `json:"ended_at"`
}

// Moving says whether the rotation's phase asks the nodes for something:
// it is live and not at an end.
func (r *Rotation) Moving() bool {
	return r.Live() && r.Phase != PhaseDone && r.Phase != PhaseAborted
}

// AppliedBy says whether a node's recorded phase is r's phase and epoch.
func (r *Rotation) AppliedBy(p NodeCAPhase) bool {
	return p.RotationID == r.ID && p.Phase == r.Phase && p.AppliedAt != nil && p.AppliedAt.Equal(r.PhaseBeganAt)
}

// Live says whether the rotation has not ended.
func (r *Rotation) Live() bool { return r != nil && r.EndedAt == nil }

// Rotates says whether the rotation rotates root.
func (r *Rotation) Rotates(root string) bool {
	for _, x := range r.Roots {
		if x == root {
			return true
		}
	}
	return false
}

// DistrustAfter is when the old roots may leave every bundle: the wait
// after signing began (zero before it did).
func (r *Rotation) DistrustAfter() time.Time {
	if r.SigningBeganAt == nil {
		return time.Time{}
	}
	return r.SigningBeganAt.Add(time.Duration(r.DistrustWaitSeconds) * time.Second)
}

// NodeCAPhase is the rotation and phase a node last applied (its renewal
// under that phase); AppliedAt is the phase's epoch it applied (the
// rotation's PhaseBeganAt then), nil when it applied none.
type NodeCAPhase struct {
	RotationID int64
	Phase      string
	AppliedAt  *time.Time
}

// caGenerationsColumn is every generation of the cluster's roots as one
// JSON array (keys: with their sealed keys), oldest first per root.
func caGenerationsColumn(keys bool) string {
	key := `''`
	if keys {
		key = `translate(encode(g.key_sealed, 'base64'), E'\n', '')`
	}
	return `coalesce((SELECT jsonb_agg(jsonb_build_object('root', g.root, 'generation', g.generation, 'state', g.state,
		'cert', g.cert, 'key_sealed', ` + key + `, 'not_after', g.not_after) ORDER BY g.root, g.generation)
		FROM ca_generations g WHERE g.kube_cluster_id = kube_clusters.id), '[]'::jsonb) AS ca_generations`
}

// caRotationColumn is the cluster's latest rotation as one JSON value.
const caRotationColumn = `(SELECT jsonb_build_object('operation_id', r.operation_id, 'roots', r.roots, 'phase', r.phase,
		'phase_began_at', r.phase_began_at, 'signing_began_at', r.signing_began_at,
		'distrust_wait_seconds', r.distrust_wait_seconds, 'state', o.state, 'reason', o.reason, 'message', o.message,
		'created_at', r.created_at, 'ended_at', o.ended_at)
	FROM ca_rotations r JOIN operations o ON o.id = r.operation_id
	WHERE r.kube_cluster_id = kube_clusters.id ORDER BY r.operation_id DESC LIMIT 1) AS ca_rotation`

// BeginRotation commits a rotation of roots of the org's active cluster,
// in one transaction that locks the cluster: its operation, held by no
// lease (the reconciler claims it at once), and its row in trusting.
// Another live operation of the cluster: ErrRotationBusy.
func (s *Store) BeginRotation(ctx context.Context, orgID, clusterID int64, roots []string, wait time.Duration) (Rotation, error) {
	var id int64
	err := s.inActiveCluster(ctx, orgID, clusterID, func(tx pgx.Tx) error {
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 `+liveOpsOf("$1")+`)`, clusterID).Scan(&busy); err != nil {
			return err
		}
		if busy {
			return ErrRotationBusy
		}
		return tx.QueryRow(ctx, `WITH op AS (
				INSERT INTO operations (kind, kube_cluster_id, target_type, target_id, state, reason, spec)
				VALUES ('`+KindCARotation+`', $1, '`+TargetCluster+`', $1, 'running', '`+ReasonInProgress+`',
					jsonb_build_object('roots', $2::text[])) RETURNING id
			)
			INSERT INTO ca_rotations (operation_id, kube_cluster_id, roots, phase, distrust_wait_seconds)
			SELECT id, $1, $2, '`+PhaseTrusting+`', $3 FROM op RETURNING operation_id`,
			clusterID, roots, int(wait/time.Second)).Scan(&id)
	})
	if err != nil {
		return Rotation{}, fmt.Errorf("beginning a CA rotation of cluster %d: %w", clusterID, err)
	}
	return s.rotation(ctx, clusterID, `r.operation_id = $2`, id)
}

// LiveRotation is the cluster's rotation in progress: ErrNotFound when
// there is none.
func (s *Store) LiveRotation(ctx context.Context, clusterID int64) (Rotation, error) {
	return s.rotation(ctx, clusterID, `o.ended_at IS NULL AND $2::int = 0`, 0)
}

func (s *Store) rotation(ctx context.Context, clusterID int64, where string, arg any) (Rotation, error) {
	var r *Rotation
	err := s.pool.QueryRow(ctx, `SELECT `+caRotationColumn+` FROM kube_clusters WHERE id = $1 AND EXISTS (
		SELECT 1 FROM ca_rotations r JOIN operations o ON o.id = r.operation_id WHERE r.kube_cluster_id = $1 AND `+where+`)`,
		clusterID, arg).Scan(&r)
	if err == nil && (r == nil || (arg == 0 && !r.Live())) {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return Rotation{}, fmt.Errorf("loading the CA rotation of cluster %d: %w", clusterID, notFound(err))
	}
	return *r, nil
}

// AbortRotation turns the org's cluster's live rotation back (phase
// untrusting), if it is not past its distrust: the reconciler steps the
// generations back. ErrNotFound: no live rotation; ErrTooLateToAbort.
func (s *Store) AbortRotation(ctx context.Context, orgID, clusterID int64) (Rotation, error) {
	var phase string
	err := s.pool.QueryRow(ctx, `WITH r AS (
			SELECT r.operation_id, r.phase FROM ca_rotations r JOIN operations o ON o.id = r.operation_id
			JOIN kube_clusters k ON k.id = r.kube_cluster_id
			WHERE r.kube_cluster_id = $2 AND k.org_id = $1 AND o.ended_at IS NULL FOR UPDATE OF r
		), moved AS (
			UPDATE ca_rotations c SET phase = '`+PhaseUntrusting+`', phase_began_at = now() FROM r
			WHERE c.operation_id = r.operation_id AND r.phase IN ('`+PhaseTrusting+`', '`+PhaseSigning+`')
		)
		SELECT phase FROM r`, orgID, clusterID).Scan(&phase)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Rotation{}, fmt.Errorf("aborting the CA rotation of cluster %d: %w", clusterID, ErrNotFound)
	case err != nil:
		return Rotation{}, fmt.Errorf("aborting the CA rotation of cluster %d: %w", clusterID, err)
	case phase == PhaseDistrusting:
		return Rotation{}, ErrTooLateToAbort
	}
	return s.LiveRotation(ctx, clusterID)
}

// TrustNext records the rotation's new generations (state next) and
// adopts each rotated root's generation 1 from its cluster columns when
// the root has no row yet, in one statement fenced by the owner's hold:
// all or none, and none again for a root that has its next already. The
// phase's epoch (phase_began_at) moves with it: a node's renewal read
// before counts for nothing (RecordCAPhase).
func (s *Store) TrustNext(ctx context.Context, clusterID int64, owner string, rotationID int64, gens []CAGeneration) error {
	var roots, states, certs []string
	var numbers []int
	var keys [][]byte
	var notAfters []*time.Time
	for _, g := range gens {
		roots, numbers, states = append(roots, g.Root), append(numbers, g.Generation), append(states, g.State)
		certs, keys, notAfters = append(certs, g.Cert), append(keys, g.KeySealed), append(notAfters, g.NotAfter)
	}
	return s.fencedCount(ctx, "trusting the next CA generations", `WITH ins AS (
			INSERT INTO ca_generations (kube_cluster_id, root, generation, state, cert, key_sealed, not_after, operation_id)
			SELECT $1, u.root, u.generation, u.state, u.cert, u.key, u.not_after, $3
			FROM unnest($4::text[], $5::int[], $6::text[], $7::text[], $8::bytea[], $9::timestamptz[])
				AS u (root, generation, state, cert, key, not_after)
			WHERE `+opHeld("$1")+`
			ON CONFLICT DO NOTHING RETURNING 1
		), bumped AS (
			UPDATE ca_rotations SET phase_began_at = now() WHERE operation_id = $3 AND `+opHeld("$1")+` RETURNING 1
		)
		SELECT count(*) FROM bumped`,
		clusterID, owner, rotationID, roots, numbers, states, certs, keys, notAfters)
}

// phaseMove is one step of a rotation's phases: the generation states it
// moves (over the rotation's roots, in order) and what else it sets.
type phaseMove struct {
	states  [][2]string
	signing bool // signing begins: signing_began_at
	shred   bool // the retired generations' keys overwritten
	// stepBack moves only roots that hold a previous generation: an abort
	// after signing began (before it, the current is still the old one).
	stepBack bool
}

// phaseMoves is the one table of what each phase change does to the
// generations: signing makes the next current and the current previous;
// the distrust retires the previous; an abort steps the new current back
// to next and the previous back to current; its end retires the next.
var phaseMoves = map[[2]string]phaseMove{
	{PhaseTrusting, PhaseSigning}:      {states: [][2]string{{GenCurrent, GenPrevious}, {GenNext, GenCurrent}}, signing: true},
	{PhaseSigning, PhaseDistrusting}:   {states: [][2]string{{GenPrevious, GenRetired}}, shred: true},
	{PhaseDistrusting, PhaseDone}:      {},
	{PhaseUntrusting, PhaseUntrusting}: {states: [][2]string{{GenCurrent, GenNext}, {GenPrevious, GenCurrent}}, stepBack: true},
	{PhaseUntrusting, PhaseAborted}:    {states: [][2]string{{GenNext, GenRetired}}, shred: true},
}

// MovePhase moves the owner's rotation from phase from to to, with the
// generation states phaseMoves says and crl, when not nil, as the
// cluster's etcd CRL (signed by the etcd CA generation the move makes
// current; ErrCRLStale when a retirement stored one meanwhile), in one transaction fenced by the
// lease and by from (an abort recorded meanwhile makes it write nothing:
// ErrLeaseLost, and the next driver reads the rotation again). The end
// phases end the operation too.
func (s *Store) MovePhase(ctx context.Context, clusterID int64, owner string, rotationID int64, from, to string, crl *NewEtcdCRL) error {
	m, ok := phaseMoves[[2]string{from, to}]
	if !ok {
		return fmt.Errorf("moving CA rotation %d: no move from %s to %s", rotationID, from, to)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved, err := moveGenerations(ctx, tx, clusterID, rotationID, m)
		if err != nil {
			return err
		}
		if crl != nil {
			if err := storeEtcdCRL(ctx, tx, clusterID, crl); err != nil {
				return err
			}
		}
		// The epoch moves with the phase or the generations: a step back
		// run again once done moves neither, and the nodes that applied
		// it still count.
		tag, err := tx.Exec(ctx, `UPDATE ca_rotations SET phase = $4,
			phase_began_at = CASE WHEN $3 <> $4 OR $7 THEN now() ELSE phase_began_at END,
			signing_began_at = CASE WHEN $5 THEN now() ELSE signing_began_at END
			WHERE operation_id = $6 AND kube_cluster_id = $1 AND phase = $3 AND `+opHeld("$1"),
			clusterID, owner, from, to, m.signing, rotationID, moved)
		if err != nil {
			return fmt.Errorf("moving CA rotation %d to %s: %w", rotationID, to, err)
		}
		if tag.RowsAffected() == 0 {
			return phaseOrLease(ctx, tx, clusterID, owner, rotationID)
		}
		return endRotation(ctx, tx, clusterID, owner, to)
	})
}

// phaseOrLease is why a phase move wrote nothing: the owner still holds
// the rotation, whose phase moved (ErrPhaseMoved), or not (ErrLeaseLost).
func phaseOrLease(ctx context.Context, tx pgx.Tx, clusterID int64, owner string, rotationID int64) error {
	var held bool
	err := tx.QueryRow(ctx, `SELECT `+opHeld("$1")+` AND EXISTS (SELECT 1 FROM ca_rotations WHERE operation_id = $3)`,
		clusterID, owner, rotationID).Scan(&held)
	switch {
	case err != nil:
		return err
	case held:
		return ErrPhaseMoved
	}
	return ErrLeaseLost
}

// moveGenerations moves the rotation's roots' generations as m says, in
// order, and says whether any moved; a retired generation's sealed key is
// overwritten, and so is its root's kube_clusters column when it was
// generation 1 there.
func moveGenerations(ctx context.Context, tx pgx.Tx, clusterID, rotationID int64, m phaseMove) (bool, error) {
	roots := `(SELECT unnest(roots) FROM ca_rotations WHERE operation_id = $2)`
	if m.stepBack {
		roots = `(SELECT root FROM ca_generations WHERE kube_cluster_id = $1 AND state = 'previous' AND root IN ` + roots + `)`
	}
	moved := false
	for _, st := range m.states {
		tag, err := tx.Exec(ctx, `UPDATE ca_generations SET state = $4, updated_at = now(),
			key_sealed = CASE WHEN $4 = '`+GenRetired+`' THEN ''::bytea ELSE key_sealed END
			WHERE kube_cluster_id = $1 AND state = $3 AND root IN `+roots, clusterID, rotationID, st[0], st[1])
		if err != nil {
			return false, fmt.Errorf("moving CA generations from %s to %s: %w", st[0], st[1], err)
		}
		moved = moved || tag.RowsAffected() > 0
	}
	if !m.shred {
		return moved, nil
	}
	return moved, shredRetiredColumns(ctx, tx, clusterID)
}

// shredRetiredColumns overwrites a root's kube_clusters sealed key once
// its generation 1 is retired: no copy of a distrusted key is left.
func shredRetiredColumns(ctx context.Context, tx pgx.Tx, clusterID int64) error {
	retired := func(root string) string {
		return `EXISTS (SELECT 1 FROM ca_generations WHERE kube_cluster_id = $1 AND root = '` + root + `' AND generation = 1 AND state = 'retired')`
	}
	_, err := tx.Exec(ctx, `UPDATE kube_clusters SET
		ca_key_sealed = CASE WHEN `+retired("ca")+` THEN ''::bytea ELSE ca_key_sealed END,
		etcd_ca_key_sealed = CASE WHEN `+retired("etcd-ca")+` THEN ''::bytea ELSE etcd_ca_key_sealed END,
		front_proxy_ca_key_sealed = CASE WHEN `+retired("front-proxy-ca")+` THEN ''::bytea ELSE front_proxy_ca_key_sealed END,
		service_account_key_sealed = CASE WHEN `+retired(RootServiceAccount)+` THEN ''::bytea ELSE service_account_key_sealed END
		WHERE id = $1`, clusterID)
	if err != nil {
		return fmt.Errorf("overwriting retired CA keys: %w", err)
	}
	return nil
}

// endRotation ends the owner's rotation when to is an end phase.
func endRotation(ctx context.Context, tx pgx.Tx, clusterID int64, owner, to string) error {
	reason := map[string]string{PhaseDone: ReasonSucceeded, PhaseAborted: ReasonAborted}[to]
	if reason == "" {
		return nil
	}
	message := map[string]string{PhaseAborted: "aborted by an operator; the next generations were retired"}[to]
	if _, err := tx.Exec(ctx, endOperation, clusterID, owner, endedState(reason), reason, message); err != nil {
		return fmt.Errorf("ending the CA rotation: %w", err)
	}
	return nil
}

// HoldRotation records why the owner's rotation stands where it is (a node
// that has not reported its phase, the token wait), as its operation's
// reason and message; "" is back to InProgress.
func (s *Store) HoldRotation(ctx context.Context, clusterID int64, owner, reason, message string) error {
	return s.fenced(ctx, "recording why the CA rotation waits", `UPDATE operations SET reason = $3, message = $4, updated_at = now()
		WHERE kube_cluster_id = $1 AND lease_owner = $2 AND ended_at IS NULL AND kind = '`+KindCARotation+`'`,
		clusterID, owner, reason, message)
}

// RecordCAPhase records that vm's node applied its cluster's rotation r
// at its phase and epoch (the phase_began_at its renewal read, kept as
// ca_phase_applied_at), only while the rotation still stands there: a
// renewal that raced a phase change or new generations records nothing,
// and the node is due again.
func (s *Store) RecordCAPhase(ctx context.Context, vmID int64, r Rotation) error {
	_, err := s.pool.Exec(ctx, `UPDATE kube_nodes SET ca_rotation_id = $2, ca_phase_applied = $3, ca_phase_applied_at = $4
		WHERE vm_id = $1 AND EXISTS (SELECT 1 FROM ca_rotations r WHERE r.operation_id = $2 AND r.phase = $3
			AND r.phase_began_at = $4 AND r.kube_cluster_id = kube_nodes.kube_cluster_id)`, vmID, r.ID, r.Phase, r.PhaseBeganAt)
	if err != nil {
		return fmt.Errorf("recording vm %d's CA phase: %w", vmID, err)
	}
	return nil
}
