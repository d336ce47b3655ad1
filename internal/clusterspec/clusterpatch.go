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

// ClusterPatch is the body of PATCH /clusters/{id}: what changes, each
// field absent (nil) when it does not. The remediation settings are
// POST /clusters' own (health.go).
type ClusterPatch struct {
	ControlPlaneCount   *int    `json:"control_plane_count"`
	UnhealthyAfter      *string `json:"unhealthy_after"`
	MaxUnhealthyPercent *int    `json:"max_unhealthy_percent"`
}

// Validate checks the whole patch before anything is changed, and is its
// remediation settings change (none when it gives neither setting): a 400
// when it names no field or a setting is not POST /clusters would take, a
// count's own refusal (Count) when it gives one.
func (p ClusterPatch) Validate() (RemediationChange, error) {
	given := p.ControlPlaneCount != nil || p.UnhealthyAfter != nil || p.MaxUnhealthyPercent != nil
	if err := invalid([]validation.Rule{rule("body", given, "must give control_plane_count, unhealthy_after or max_unhealthy_percent")},
		remediationRules(p.UnhealthyAfter, p.MaxUnhealthyPercent)); err != nil {
		return RemediationChange{}, err
	}
	if p.ControlPlaneCount != nil {
		if _, err := p.Count(); err != nil {
			return RemediationChange{}, err
		}
	}
	return remediationChange(p.UnhealthyAfter, p.MaxUnhealthyPercent), nil
}

// Count is the new control-plane count: a 400 when the body names none, a
// 422 (invalid_control_plane_count) when it is not one of
// ScalableControlPlaneCounts.
func (p ClusterPatch) Count() (int, error) {
	if err := invalid([]validation.Rule{rule("control_plane_count", p.ControlPlaneCount != nil, "is required")}); err != nil {
		return 0, err
	}
	if n := *p.ControlPlaneCount; !slices.Contains(ScalableControlPlaneCounts, n) {
		return 0, apperr.InvalidControlPlaneCount.Detailf("control_plane_count must be 1, 3 or 5, not %d: etcd needs a majority of its "+
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed", n)
	}
	return *p.ControlPlaneCount, nil
}
