package controlplane

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

func scalingViewOf(g store.Scaling) apitypes.ControlPlaneScaling {
	return apitypes.ControlPlaneScaling{ID: g.ID, ClusterID: g.ClusterID, FromCount: g.From, ToCount: g.To,
		State: g.State, StateReason: g.StateReason, CreatedAt: g.CreatedAt}
}

// ScaleControlPlane records that one of org's active clusters' control
// plane is to have patch's count; the reconciler drives it, one new member
// at a time (docs/SCALE-CONTROL-PLANE.md). Refused with nothing written:
// a count that is not 1, 3 or 5 (422), the count it has (409), another
// operation on its control plane (409), or a change that could lose
// etcd's quorum (409 would_lose_quorum: growing with a member not ready,
// shrinking while the members a removal needs are not).
func (s *Service) ScaleControlPlane(ctx context.Context, org auth.Principal, clusterID int64, patch clusterspec.ClusterPatch) (apitypes.ControlPlaneScaling, error) {
	to, err := patch.Count()
	if err != nil {
		return apitypes.ControlPlaneScaling{}, err
	}
	c, err := s.ActiveCluster(ctx, org, clusterID, "its control plane is scaled")
	if err != nil {
		return apitypes.ControlPlaneScaling{}, err
	}
	if err := s.noControlPlaneOperation(ctx, c.ID); err != nil {
		return apitypes.ControlPlaneScaling{}, err
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return apitypes.ControlPlaneScaling{}, usecase.DatabaseError(err)
	}
	if err := scalable(LiveControlPlane(nodes), to); err != nil {
		return apitypes.ControlPlaneScaling{}, err
	}
	g, err := s.Store.BeginScaling(ctx, org.OrgID, c.ID, to)
	if err != nil {
		return apitypes.ControlPlaneScaling{}, s.scalingRefused(ctx, c.ID, err)
	}
	return scalingViewOf(g), nil
}

// noControlPlaneOperation: one membership change at a time, so neither a
// replacement nor a scaling may be live. The transaction that begins
// either holds the rule too.
func (s *Service) noControlPlaneOperation(ctx context.Context, clusterID int64) error {
	if err := s.noLiveReplacement(ctx, clusterID); err != nil {
		return err
	}
	return s.noLiveScaling(ctx, clusterID)
}

func (s *Service) noLiveScaling(ctx context.Context, clusterID int64) error {
	g, err := s.Store.LiveScaling(ctx, clusterID)
	switch {
	case err == nil:
		return ScalingInProgress(clusterID, g)
	case errors.Is(err, store.ErrNotFound):
		return nil
	}
	return usecase.DatabaseError(err)
}

// ScalingInProgress is the 409 that names the cluster's live scaling.
func ScalingInProgress(clusterID int64, g store.Scaling) error {
	return apperr.ScalingInProgress.Detailf("the control plane is being scaled from %d to %d nodes (scaling %d); poll GET /clusters/%d",
		g.From, g.To, g.ID, clusterID)
}

// scalingRefused maps a scaling that could not begin to its answer.
func (s *Service) scalingRefused(ctx context.Context, clusterID int64, err error) error {
	switch {
	case errors.Is(err, store.ErrReplacing), errors.Is(err, store.ErrScaling):
		if err := s.noControlPlaneOperation(ctx, clusterID); err != nil {
			return err
		}
		return apperr.ScalingInProgress.New()
	case errors.Is(err, store.ErrClusterNotActive):
		return apperr.ClusterNotActive.New()
	}
	return usecase.DatabaseError(err)
}

// scalable: to is a change of the live control plane cp that keeps etcd's
// quorum. Growing: every member of cp reported ready. A new member is a
// learner (no vote) until it has caught up; its promotion makes a voter
// count whose majority needs every member that is up now (1 → 2 voters
// needs both), so a member that is not ready could lose the quorum.
// Shrinking: the first removal keeps it (shrinkable; each next one is
// checked before it begins).
func scalable(cp []store.Node, to int) error {
	switch {
	case len(cp) == to:
		return apperr.ControlPlaneUnchanged.Detailf("the control plane has %d nodes already; nothing was changed", to)
	case to < len(cp):
		return shrinkable(cp)
	}
	for _, n := range cp {
		if n.ReadyAt == nil {
			return apperr.WouldLoseQuorum.Detailf("node %s has not reported ready: each new etcd member, once promoted, makes a "+
				"majority that needs every member up now; nothing was changed", n.Name)
		}
	}
	return nil
}
