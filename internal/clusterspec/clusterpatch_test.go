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
		{ClusterPatch{count(1)}, 0, ""},
		{ClusterPatch{count(3)}, 0, ""},
		{ClusterPatch{count(5)}, 0, ""},
		{ClusterPatch{}, http.StatusBadRequest, "control_plane_count: is required"},
		{ClusterPatch{count(2)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 2: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
		{ClusterPatch{count(4)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 4: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
		{ClusterPatch{count(7)}, http.StatusUnprocessableEntity, "control_plane_count must be 1, 3 or 5, not 7: etcd needs a majority of its " +
			"members up, so an even count tolerates no more failures than the odd one below it; nothing was changed"},
	} {
		n, err := c.patch.Validate()
		e, _ := apperr.As(err)
		switch {
		case c.status == 0 && (err != nil || n != *c.patch.ControlPlaneCount):
			t.Errorf("%v: %d, %v; want valid", *c.patch.ControlPlaneCount, n, err)
		case c.status != 0 && (e == nil || e.Status() != c.status || e.Message != c.message):
			t.Errorf("%+v: %v, want %d %q", c.patch, err, c.status, c.message)
		}
	}
}
