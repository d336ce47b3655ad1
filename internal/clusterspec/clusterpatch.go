package clusterspec

import (
	"slices"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/validation"
)

// ScalableControlPlaneCounts are the sizes PATCH /clusters/{id} may scale
// a control plane to: odd, as an even count tolerates no more failures
// than the odd one below it and needs one more member up.
var ScalableControlPlaneCounts = []int{1, 3, 5}

// MaxControlPlaneCount is the most control-plane nodes a cluster has.
const MaxControlPlaneCount = 5

// ClusterPatch is the body of PATCH /clusters/{id}: what changes.
type ClusterPatch struct {
	ControlPlaneCount *int `json:"control_plane_count"`
}

// Validate is the new control-plane count: a 400 when the body names
// none, a 422 (invalid_control_plane_count) when it is not one of
// ScalableControlPlaneCounts.
func (p ClusterPatch) Validate() (int, error) {
	if err := invalid([]validation.Rule{rule("control_plane_count", p.ControlPlaneCount != nil, "is required")}); err != nil {
		return 0, err
	}
	if n := *p.ControlPlaneCount; !slices.Contains(ScalableControlPlaneCounts, n) {
		return 0, apperr.InvalidControlPlaneCount.Detailf("control_plane_count must be 1, 3 or 5, not %d: etcd needs a majority of its "+
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed", n)
	}
	return *p.ControlPlaneCount, nil
}
