package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"

	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Scaling names the kind in the reconciler's counts.
const Scaling = "control-plane scaling"

// scaling is one control-plane scaling as the reconciler drives it: the
// row, the members that are up, and the member being added (if any) as a
// one-node operation of the cluster under its lease, so founding's node
// steps make it, as they make a replacement's.
type scaling struct {
	row  store.Scaling
	live []store.Node
	op   *NodeOp
	// leaving is the member being removed (marked retiring) by a shrink;
	// nil when none is.
	leaving *store.Node
	// readyWithin is how long a new member has to report ready, and a
	// leaving one's removal to be reported.
	readyWithin time.Duration
}

// joining is the member being added; nil between two members.
func (g *scaling) joining() *store.Node {
	if len(g.op.Nodes) == 0 {
		return nil
	}
	return &g.op.Nodes[0]
}

// scalingKind: one member at a time under the operation's lease; let go with
// the cluster active; undone as undoScaling says.
func (s *Service) scalingKind() engine.Kind[*scaling] {
	return engine.Kind[*scaling]{
		Name:  Scaling,
		Steps: s.scalingSteps,
		Release: func(ctx context.Context, g *scaling, until time.Time, step string) error {
			return s.releaseActive(ctx, g.op, until, step)
		},
		Undo: s.undoScaling,
	}
}

// scalingSteps is the order of one membership change: the new member is
// made by founding's node steps, joins etcd as a learner and is promoted
// by its own bundle (join mode, as a replacement's), reports ready, and
// the DNS name points at it; then the next member, until the count is
// reached and the scaling ends.
// A shrink removes one member at a time (shrink.go).
func (s *Service) scalingSteps(g *scaling) []engine.Step[*scaling] {
	switch {
	case g.leaving != nil:
		return s.removalSteps()
	case g.shrinks():
		return s.leavingSteps()
	case g.joining() == nil:
		return []engine.Step[*scaling]{{Name: "settled", Run: s.settleScaling}}
	}
	return append(engine.On(s.NodeSteps(), func(g *scaling) *NodeOp { return g.op }),
		engine.Step[*scaling]{Name: "new member ready", Run: s.awaitMember},
		engine.Step[*scaling]{Name: "endpoint", Run: s.pointAtMembers},
		engine.Step[*scaling]{Name: "next member", Run: s.nextMember},
	)
}

func (s *Service) awaitMember(_ context.Context, g *scaling, _ time.Time) error {
	return s.awaitReady(*g.joining(), g.row.ChangedAt, g.readyWithin)
}

// pointAtMembers points the cluster's DNS name at the members, the new one
// among them (best effort, as at founding).
func (s *Service) pointAtMembers(ctx context.Context, g *scaling, _ time.Time) error {
	g.live = append(g.live, *g.joining())
	g.op.Nodes = nil
	s.PointDNS(ctx, &g.op.Cluster, g.live)
	return nil
}

// nextMember intends the next member and runs its steps, or ends the
// scaling once the count is reached.
func (s *Service) nextMember(ctx context.Context, g *scaling, deadline time.Time) error {
	if err := s.intendMember(ctx, g); err != nil {
		return err
	}
	return engine.Run(ctx, Scaling, s.scalingSteps(g), g, deadline)
}

// intendMember records the next member's row when none is on its way and
// the live control plane is short of the count (its ordinal is never
// handed out again).
func (s *Service) intendMember(ctx context.Context, g *scaling) error {
	if g.joining() != nil || len(g.live) >= g.row.To {
		return nil
	}
	c := &g.op.Cluster
	n, err := s.Store.IntendScalingNode(ctx, c.ID, g.op.Lease.Owner, g.row.ID,
		func(ordinal int) string { return clusterspec.NodeName(ordinal, c.ID) })
	if err != nil {
		return usecase.Recorded(err)
	}
	g.op.Nodes, g.row.ChangedAt = []store.Node{n}, s.Clock()
	return nil
}

// settleScaling ends a scaling whose count is reached.
func (s *Service) settleScaling(ctx context.Context, g *scaling, _ time.Time) error {
	end := store.ScalingEnd{State: store.ScalingDone}
	return usecase.Recorded(s.Store.EndScaling(ctx, g.row.ClusterID, g.op.Lease.Owner, g.row.ID, end))
}

// ReconcileScaling drives claimed cluster c's control-plane scaling as far
// as it goes now. A failure lets go of the cluster for a later run.
func (s *Service) ReconcileScaling(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	return s.lettingGoOnFailure(ctx, c, lease, pass, Scaling, s.reconcileScaling)
}

func (s *Service) reconcileScaling(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) engine.Result {
	g, err := s.scalingFor(ctx, c, lease, cmp.Or(pass.ReplaceWithin, DefaultReplaceWithin))
	if err != nil {
		return engine.Retry(err)
	}
	if err := s.intendMember(ctx, g); err != nil {
		return engine.Retry(err)
	}
	if n := g.joining(); n != nil && !n.Issued {
		if err := s.Open(ctx, g.op); err != nil {
			return engine.Retry(err)
		}
	}
	return engine.Drive(ctx, s.Driver(pass.RetryAfter), s.scalingKind(), g, pass.Deadline)
}

// scalingFor loads the scaling of claimed cluster c: its row, the members
// that are up, the new member on its way (a node of the scaling not
// ready yet) and the leaving one (retiring: while a scaling is live, no
// other operation changes the membership).
func (s *Service) scalingFor(ctx context.Context, c store.Cluster, lease store.Lease, readyWithin time.Duration) (*scaling, error) {
	row, err := s.Store.LiveScaling(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	g := &scaling{row: row, op: &NodeOp{Cluster: c, Lease: lease}, readyWithin: readyWithin}
	for _, n := range ControlPlaneOf(nodes) {
		switch {
		case n.Retiring:
			g.leaving = &n
		case n.ScalingID == row.ID && n.ReadyAt == nil:
			g.op.Nodes = []store.Node{n}
		default:
			g.live = append(g.live, n)
		}
	}
	return g, nil
}

// undoScaling ends a scaling one of whose steps failed: a new member that
// never reported ready in time is kept (it may be in etcd: which of them
// etcd holds cannot be judged from here) and the scaling ends failed; one
// that has its identities is not turned back (its bundle may have joined
// etcd: the step is retried); any other new member is removed (its VM, a
// create whose id was lost found by its token, then its row) and the
// scaling ends failed with the count the cluster has.
func (s *Service) undoScaling(ctx context.Context, g *scaling, cause error) error {
	var late *notReadyInTime
	n := g.joining()
	switch {
	case g.leaving != nil:
		return s.undoRemoval(ctx, g, cause)
	case errors.As(cause, &late):
		return s.failScaling(ctx, g, late.Error(), 0)
	case n == nil:
		return s.failScaling(ctx, g, usecase.Reason(cause), 0)
	case n.Issued:
		return cause // ReconcileScaling lets go of it for a later run
	}
	if err := s.vms().Delete(ctx, &g.op.Cluster, *n); err != nil {
		return err
	}
	return s.failScaling(ctx, g, fmt.Sprintf("%s; the new node %s was removed", usecase.Reason(cause), n.Name), n.ID)
}

// undoRemoval: a leaving member out of etcd is never turned back (its
// VM's deletion and its row's retirement are retried); one whose removal
// was never reported is kept, no longer retiring, and the scaling fails.
func (s *Service) undoRemoval(ctx context.Context, g *scaling, cause error) error {
	if g.leaving.EtcdRemovedAt != nil {
		return cause // ReconcileScaling lets go of it for a later run
	}
	reason := usecase.Reason(cause)
	if late := (*removalNotReported)(nil); errors.As(cause, &late) {
		reason = late.Error()
	}
	end := store.ScalingEnd{State: store.ScalingFailed, Reason: reason, Keep: g.leaving.ID}
	return usecase.Recorded(s.Store.EndScaling(ctx, g.row.ClusterID, g.op.Lease.Owner, g.row.ID, end))
}

func (s *Service) failScaling(ctx context.Context, g *scaling, reason string, remove int64) error {
	end := store.ScalingEnd{State: store.ScalingFailed, Reason: reason, Remove: remove}
	return usecase.Recorded(s.Store.EndScaling(ctx, g.row.ClusterID, g.op.Lease.Owner, g.row.ID, end))
}
