package controlplane

import (
	"context"
	"fmt"
	"slices"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Shrinking the control plane (docs/SCALE-CONTROL-PLANE.md, "Shrinking"):
// one member at a time, each removal after a quorum check. The leaving
// member is marked retiring; a member that stays removes it from etcd
// (exk8s-etcd-membership.sh, the lowest-ordinal ready member: a dead
// leaving node could not, and a live one is never trusted to report its
// own removal) and reports it; only then is its VM deleted, its row
// retired with the CRL that lists its etcd serials, and the DNS name
// pointed at the members that stay.

// removalSteps is the order of one removal, g.leaving marked retiring.
func (s *Service) removalSteps() []engine.Step[*scaling] {
	return []engine.Step[*scaling]{
		{Name: "member removed from etcd", Run: s.awaitRemoval},
		{Name: "control-plane name off the leaving member", Run: func(ctx context.Context, g *scaling, _ time.Time) error {
			return s.nameOff(ctx, &g.op.Cluster, *g.leaving, store.Node{}, g.live)
		}},
		{Name: "leaving VM", Run: s.deleteLeavingVM},
		{Name: "leaving member retired", Run: s.retireLeaving},
		{Name: "next member", Run: s.nextMember},
	}
}

// leavingSteps choose the next member to leave, then remove it.
func (s *Service) leavingSteps() []engine.Step[*scaling] {
	return append([]engine.Step[*scaling]{{Name: "leaving member", Run: s.markLeaving}}, s.removalSteps()...)
}

// shrinks: the live control plane is above the count and no member is on
// its way in.
func (g *scaling) shrinks() bool { return g.joining() == nil && len(g.live) > g.row.To }

// LeavingMember is the member a shrink removes next from cp (its live
// control plane): the highest ordinal that is not the snapshot node (the
// lowest-ordinal ready one, as etcdsnapshot.ChooseNode picks), so the
// node that snapshots and the node that removes stay put.
func LeavingMember(cp []store.Node) (leaving store.Node, others []store.Node) {
	keep := RemovingMember(cp)
	for _, n := range cp {
		if n.ID != keep.ID && n.Ordinal > leaving.Ordinal {
			leaving = n
		}
	}
	for _, n := range cp {
		if n.ID != leaving.ID {
			others = append(others, n)
		}
	}
	return leaving, others
}

// RemovingMember is the member among cp that removes the others from
// etcd (and takes the snapshots): the lowest-ordinal ready one with a VM,
// not retiring; the zero Node when none is.
func RemovingMember(cp []store.Node) store.Node {
	var best store.Node
	for _, n := range cp {
		if n.ReadyAt != nil && n.VMID != 0 && !n.Retiring && (best.ID == 0 || n.Ordinal < best.Ordinal) {
			best = n
		}
	}
	return best
}

// shrinkable: removing cp's leaving member keeps etcd's quorum.
func shrinkable(cp []store.Node) error {
	leaving, others := LeavingMember(cp)
	return removalKeepsQuorum(leaving, others)
}

// removalKeepsQuorum: etcd commits the removal of leaving in the
// membership it has now, so a majority of all the members (leaving among
// them) must be ready; and the members that stay, a majority of them
// ready, hold the quorum once it is gone (quorumKept). From two members
// to one, both must be up: etcd cannot remove a dead member of two.
func removalKeepsQuorum(leaving store.Node, others []store.Node) error {
	if err := quorumKept(leaving, others, "removing"); err != nil {
		return err
	}
	all := append(slices.Clone(others), leaving)
	if ready, need := readyCount(all), len(all)/2+1; ready < need {
		return apperr.WouldLoseQuorum.Detailf("%d of the %d control-plane nodes reported ready; etcd commits the removal of %s "+
			"only with %d of them (a majority of the members it has now); nothing was changed", ready, len(all), leaving.Name, need)
	}
	return nil
}

// readyCount is how many of nodes reported ready and are not retiring.
func readyCount(nodes []store.Node) int {
	ready := 0
	for _, n := range nodes {
		if n.ReadyAt != nil && !n.Retiring { // a retiring member may be gone any moment
			ready++
		}
	}
	return ready
}

// markLeaving chooses the next leaving member and marks it retiring, once
// its removal keeps the quorum; until then it waits (a member may report
// ready again) for at most readyWithin, then the scaling fails.
func (s *Service) markLeaving(ctx context.Context, g *scaling, _ time.Time) error {
	leaving, others := LeavingMember(g.live)
	if err := removalKeepsQuorum(leaving, others); err != nil {
		return s.waitOr(g, err, "the quorum check of the next removal fails: "+err.Error())
	}
	c := &g.op.Cluster
	if err := usecase.Recorded(s.Store.RetireScalingMember(ctx, c.ID, g.op.Lease.Owner, g.row.ID, leaving.ID)); err != nil {
		return err
	}
	leaving.Retiring = true
	g.leaving, g.live, g.row.ChangedAt = &leaving, others, s.Clock()
	return nil
}

// waitOr is a wait on what while readyWithin has not passed since the
// scaling's last change, then cause (which fails the scaling).
func (s *Service) waitOr(g *scaling, cause error, what string) error {
	if s.Clock().Sub(g.row.ChangedAt) <= g.readyWithin {
		return engine.Wait(what)
	}
	return cause
}

// removalNotReported fails a shrink whose leaving member's etcd removal
// no member that stays reported in time: the member is kept.
type removalNotReported struct {
	node   string
	within time.Duration
}

func (e *removalNotReported) Error() string {
	return fmt.Sprintf("no control-plane node that stays reported the etcd removal of %s within %s; it is kept "+
		"(its VM and its member): see the remaining nodes' exk8s-etcd-membership.service", e.node, e.within)
}

// awaitRemoval waits until a member that stays reported the leaving
// member removed from etcd.
func (s *Service) awaitRemoval(_ context.Context, g *scaling, _ time.Time) error {
	if g.leaving.EtcdRemovedAt != nil {
		return nil
	}
	return s.waitOr(g, &removalNotReported{node: g.leaving.Name, within: g.readyWithin},
		"the etcd removal of "+g.leaving.Name+" has not been reported yet")
}

func (s *Service) deleteLeavingVM(ctx context.Context, g *scaling, deadline time.Time) error {
	if err := s.InTime(deadline); err != nil {
		return err
	}
	return s.vms().Delete(ctx, &g.op.Cluster, *g.leaving)
}

// retireLeaving removes the leaving member's row with the etcd CRL that
// lists its etcd-CA serials (as a replacement's old node), then points
// the DNS name at the members that stay.
func (s *Service) retireLeaving(ctx context.Context, g *scaling, _ time.Time) error {
	c := &g.op.Cluster
	crl, err := s.etcdRevocation(ctx, c, *g.leaving)
	if err != nil {
		return err // the next run retries: the row goes only with the CRL that lists it
	}
	if err := usecase.Recorded(s.Store.RemoveScalingMember(ctx, c.ID, g.op.Lease.Owner, g.row.ID, g.leaving.ID, crl)); err != nil {
		return err
	}
	g.leaving = nil
	s.PointDNS(ctx, c, g.live)
	return nil
}
