package clusterspec

import (
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
)

func TestClusterPatchCount(t *testing.T) {
	count := func(n int) *int { return &n }
	for _, c := range []struct {
		patch   ClusterPatch
		status  int // 0: valid
		message string
	}{
		{ClusterPatch{ControlPlaneCount: count(1)}, 0, ""},
		{ClusterPatch{ControlPlaneCount: count(3)}, 0, ""},
		{ClusterPatch{ControlPlaneCount: count(5)}, 0, ""},
		{ClusterPatch{}, http.StatusBadRequest, "control_plane_count: is required"},
		{ClusterPatch{ControlPlaneCount: count(2)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 2: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
		{ClusterPatch{ControlPlaneCount: count(4)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 4: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
		{ClusterPatch{ControlPlaneCount: count(7)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 7: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
	} {
		n, err := c.patch.Count()
		e, _ := apperr.As(err)
		switch {
		case c.status == 0 && (err != nil || n != *c.patch.ControlPlaneCount):
			t.Errorf("%v: %d, %v; want valid", *c.patch.ControlPlaneCount, n, err)
		case c.status != 0 && (e == nil || e.Status() != c.status || e.Message != c.message):
			t.Errorf("%+v: %v, want %d %q", c.patch, err, c.status, c.message)
		}
	}
}

const badUnhealthyAfter = `unhealthy_after: must be "0" (remediation off) or a duration of whole seconds from 1m0s to 24h0m0s, such as "5m"`

// A patch names at least one field; its settings are refused as POST
// /clusters refuses them, before its count is judged; a valid one is the
// settings it gives, nil for the others.
func TestClusterPatchValidate(t *testing.T) {
	count := func(n int) *int { return &n }
	after := func(s string) *string { return &s }
	for _, c := range []struct {
		patch   ClusterPatch
		status  int // 0: valid
		message string
		after   *int // the valid change's seconds
		percent *int
	}{
		{patch: ClusterPatch{}, status: http.StatusBadRequest, message: "body: must give control_plane_count, unhealthy_after or max_unhealthy_percent"},
		{patch: ClusterPatch{ControlPlaneCount: count(3)}},
		{patch: ClusterPatch{UnhealthyAfter: after("0")}, after: count(0)},
		{patch: ClusterPatch{UnhealthyAfter: after("1m")}, after: count(60)},
		{patch: ClusterPatch{UnhealthyAfter: after("90s"), MaxUnhealthyPercent: count(0)}, after: count(90), percent: count(0)},
		{patch: ClusterPatch{MaxUnhealthyPercent: count(100), ControlPlaneCount: count(5)}, percent: count(100)},
		{patch: ClusterPatch{UnhealthyAfter: after("30s")}, status: http.StatusBadRequest, message: badUnhealthyAfter},
		{patch: ClusterPatch{UnhealthyAfter: after("90.5s")}, status: http.StatusBadRequest, message: badUnhealthyAfter},
		{patch: ClusterPatch{UnhealthyAfter: after("soon")}, status: http.StatusBadRequest, message: badUnhealthyAfter},
		{patch: ClusterPatch{MaxUnhealthyPercent: count(101)}, status: http.StatusBadRequest, message: "max_unhealthy_percent: must be 0 to 100"},
		{patch: ClusterPatch{MaxUnhealthyPercent: count(-1), ControlPlaneCount: count(2)}, status: http.StatusBadRequest,
			message: "max_unhealthy_percent: must be 0 to 100"},
		{patch: ClusterPatch{MaxUnhealthyPercent: count(40), ControlPlaneCount: count(2)}, status: http.StatusUnprocessableEntity,
			message: "control_plane_count must be 1, 3 or 5, not 2: etcd needs a majority of its members up, so an even count tolerates " +
				"no more failures than the odd one below it; nothing was changed"},
	} {
		ch, err := c.patch.Validate()
		e, _ := apperr.As(err)
		switch {
		case c.status == 0 && (err != nil || !sameInt(ch.UnhealthyAfterSeconds, c.after) || !sameInt(ch.MaxUnhealthyPercent, c.percent)):
			t.Errorf("%+v: %+v, %v; want valid", c.patch, ch, err)
		case c.status != 0 && (e == nil || e.Status() != c.status || e.Message != c.message):
			t.Errorf("%+v: %v, want %d %q", c.patch, err, c.status, c.message)
		}
	}
}

func sameInt(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// The trail says each setting given, from the old value to the new.
func TestRemediationChangeDescribe(t *testing.T) {
	secs, percent := 60, 25
	for _, c := range []struct {
		change RemediationChange
		want   string
	}{
		{RemediationChange{UnhealthyAfterSeconds: &secs}, "unhealthy_after 0s → 1m0s"},
		{RemediationChange{MaxUnhealthyPercent: &percent}, "max_unhealthy_percent 40 → 25"},
		{RemediationChange{UnhealthyAfterSeconds: &secs, MaxUnhealthyPercent: &percent}, "unhealthy_after 0s → 1m0s, max_unhealthy_percent 40 → 25"},
	} {
		if got := c.change.Describe(0, 40); got != c.want {
			t.Errorf("%+v: %q, want %q", c.change, got, c.want)
		}
	}
	if (RemediationChange{}).Any() || !(RemediationChange{MaxUnhealthyPercent: &percent}).Any() {
		t.Error("Any")
	}
}
