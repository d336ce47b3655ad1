package carotation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Rotation names the kind in the reconciler's counts.
const Rotation = "CA rotation"

// The typed reasons a rotation holds with (operations.reason).
const (
	ReasonNodeNotReported  = "NodeNotReported"
	ReasonWaitingForTokens = "WaitingForTokens"
)

// rotating is one rotation as the reconciler drives it: its cluster (with
// its generations as claimed), its row, and the lease.
type rotating struct {
	c     store.Cluster
	row   store.Rotation
	lease store.Lease
}

// kind: the phases in order under the operation's lease; a failed step is
// never turned back by itself (a rotation goes back only when an operator
// aborts it), it is retried.
func (s *Service) kind() engine.Kind[*rotating] {
	return engine.Kind[*rotating]{
		Name:  Rotation,
		Steps: s.steps,
		Release: func(ctx context.Context, r *rotating, until time.Time, step string) error {
			return usecase.Recorded(s.Store.ReleaseLease(ctx, r.c.ID, r.lease.Owner, until, step))
		},
		Undo: func(_ context.Context, _ *rotating, cause error) error { return cause },
	}
}

// steps are what is left of the rotation from its phase on: each phase
// waits for every node to apply it before the next begins.
func (s *Service) steps(r *rotating) []engine.Step[*rotating] {
	if r.row.Phase == store.PhaseUntrusting {
		return []engine.Step[*rotating]{
			{Name: "step back", Run: s.move(store.PhaseUntrusting, store.PhaseUntrusting)},
			{Name: "nodes sign with the old again", Run: s.applied},
			{Name: "tokens of the new expire", Run: s.tokensExpired},
			{Name: "retire the new", Run: s.move(store.PhaseUntrusting, store.PhaseAborted)},
		}
	}
	all := []engine.Step[*rotating]{
		{Name: "new generations", Run: s.trustNext},
		{Name: "nodes trust both", Run: s.applied},
		{Name: "sign with the new", Run: s.move(store.PhaseTrusting, store.PhaseSigning)},
		{Name: "nodes sign with the new", Run: s.applied},
		{Name: "tokens of the old expire", Run: s.tokensExpired},
		{Name: "distrust the old", Run: s.move(store.PhaseSigning, store.PhaseDistrusting)},
		{Name: "nodes distrust the old", Run: s.applied},
		{Name: "done", Run: s.move(store.PhaseDistrusting, store.PhaseDone)},
	}
	from := map[string]int{store.PhaseTrusting: 0, store.PhaseSigning: 3, store.PhaseDistrusting: 6}[r.row.Phase]
	return all[from:]
}

// trustNext makes, seals and records a next generation of every rotated
// root that has none (adopting generation 1 from the cluster's columns
// into a row first): all in one statement, none again on a resumed run.
func (s *Service) trustNext(ctx context.Context, r *rotating, deadline time.Time) error {
	var gens []store.CAGeneration
	dk, err := s.Envelope.OpenDataKey(ctx, keyring.Scope(&r.c), r.c.WrappedDataKey)
	if err != nil {
		return err
	}
	alg, err := pki.ParseAlgorithm(r.c.KeyAlgorithm)
	if err != nil {
		return err
	}
	for _, root := range r.row.Roots {
		made, err := nextOf(dk, s.Issuer(alg), &r.c, root)
		if err != nil {
			return err
		}
		gens = append(gens, made...)
	}
	if len(gens) == 0 {
		return nil
	}
	if err := s.InTime(deadline); err != nil {
		return err
	}
	if err := s.Store.TrustNext(ctx, r.c.ID, r.lease.Owner, r.row.ID, gens); err != nil {
		return usecase.Recorded(err)
	}
	return s.reload(ctx, r)
}

// nextOf is what root needs recorded to have a next generation: nothing
// when it has one, else a new one (and generation 1 adopted when the root
// has no row yet).
func nextOf(dk *envelope.DataKey, is pki.Issuer, c *store.Cluster, root string) ([]store.CAGeneration, error) {
	gens := keyring.Generations(c, root)
	if slices.ContainsFunc(gens, func(g store.CAGeneration) bool { return g.State == store.GenNext }) {
		return nil, nil
	}
	next, err := keyring.NewGeneration(dk, is, root, gens[len(gens)-1].Generation+1)
	if err != nil {
		return nil, err
	}
	out := []store.CAGeneration{next}
	if !slices.ContainsFunc(c.CAGenerations, func(g store.CAGeneration) bool { return g.Root == root }) {
		out = append(out, keyring.GenerationOne(c, root))
	}
	return out, nil
}

// move moves the rotation from phase from to phase to (store.MovePhase:
// the generations with it, the etcd CRL signed again when the move changes
// its signer, the operation's end with the end phases). A CRL a
// retirement stored meanwhile (store.ErrCRLStale) fails the step, which is
// retried from the rows.
func (s *Service) move(from, to string) func(context.Context, *rotating, time.Time) error {
	return func(ctx context.Context, r *rotating, deadline time.Time) error {
		crl, err := s.resignedCRL(ctx, r, from, to)
		if err != nil {
			return err
		}
		if err := s.InTime(deadline); err != nil {
			return err
		}
		err = s.Store.MovePhase(ctx, r.c.ID, r.lease.Owner, r.row.ID, from, to, crl)
		if errors.Is(err, store.ErrPhaseMoved) {
			// An abort moved it meanwhile: let go at once, and the next
			// driver reads the rotation again.
			return fmt.Errorf("%w: %w", engine.ErrOutOfTime, err)
		}
		if err != nil {
			return usecase.Recorded(err)
		}
		return s.reload(ctx, r)
	}
}

// reload reads the rotation's row again after a write of its own (its
// phase and epoch moved); an ended rotation is left as it was.
func (s *Service) reload(ctx context.Context, r *rotating) error {
	row, err := s.Store.LiveRotation(ctx, r.c.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return usecase.Recorded(err)
	}
	r.row = row
	return nil
}

// applied waits until every node has applied the rotation's phase and
// epoch (its renewal under it); until then the rotation holds with a
// reason that names the nodes, and the control-plane name is steered off
// the node asked last (steer).
func (s *Service) applied(ctx context.Context, r *rotating, _ time.Time) error {
	nodes, err := s.Store.ClusterNodes(ctx, r.c.ID)
	if err != nil {
		return usecase.Recorded(err)
	}
	s.steer(ctx, r, nodes)
	var late []string
	for _, n := range counted(nodes) {
		if !r.row.AppliedBy(n.CAPhase) {
			late = append(late, n.Name)
		}
	}
	if len(late) == 0 {
		return s.hold(ctx, r, store.ReasonInProgress, "")
	}
	why := fmt.Sprintf("node %s has not applied the %s phase (its certificate renewal under it); the rotation holds until it does%s",
		strings.Join(late, ", "), r.row.Phase, s.steering(r))
	if err := s.hold(ctx, r, ReasonNodeNotReported, why); err != nil {
		return err
	}
	return engine.Wait(why)
}

// tokensExpired waits out the distrust wait from when signing began (an
// abort: from its step back, when signing had begun), so nothing signed
// by the key about to be retired is still in use.
func (s *Service) tokensExpired(ctx context.Context, r *rotating, _ time.Time) error {
	until := r.row.DistrustAfter()
	if r.row.Phase == store.PhaseUntrusting && r.row.SigningBeganAt != nil {
		until = r.row.PhaseBeganAt.Add(time.Duration(r.row.DistrustWaitSeconds) * time.Second)
	}
	if !s.Clock().Before(until) {
		return s.hold(ctx, r, store.ReasonInProgress, "")
	}
	why := fmt.Sprintf("admin kubeconfigs and service-account tokens signed before may be in use until %s; the retiring generations stay trusted until then",
		until.UTC().Format(time.RFC3339))
	if err := s.hold(ctx, r, ReasonWaitingForTokens, why); err != nil {
		return err
	}
	return engine.Wait(why)
}

// hold records why the rotation stands where it is, when that changed.
func (s *Service) hold(ctx context.Context, r *rotating, reason, message string) error {
	if r.row.Reason == reason && r.row.Message == message {
		return nil
	}
	if err := s.Store.HoldRotation(ctx, r.c.ID, r.lease.Owner, reason, message); err != nil {
		return usecase.Recorded(err)
	}
	r.row.Reason, r.row.Message = reason, message
	return nil
}

// ReconcileRotation drives claimed cluster c's rotation as far as it goes
// now. A failure lets go of it for a later run.
func (s *Service) ReconcileRotation(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	if !c.CARotation.Live() {
		return Rotation, engine.Retry(fmt.Errorf("cluster %d has no live CA rotation", c.ID))
	}
	r := &rotating{c: c, row: *c.CARotation, lease: lease}
	res := engine.Drive(ctx, s.Driver(pass.RetryAfter), s.kind(), r, pass.Deadline)
	if res.Outcome == engine.Retrying && !errors.Is(res.Err, store.ErrLeaseLost) {
		until := s.Clock().Add(cmp.Or(pass.RetryAfter, usecase.DefaultRetryAfter))
		if err := s.Store.ReleaseLease(ctx, c.ID, lease.Owner, until, ""); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			s.Logger().WarnContext(ctx, "releasing a CA rotation failed; its lease runs out", "cluster_id", c.ID, "cause", err.Error())
		}
	}
	return Rotation, res
}
