package controlplane

import (
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
)

// A scaling grows a control plane all of whose members reported ready;
// the count it has, a smaller one, or a member not ready is refused.
func TestScalable(t *testing.T) {
	for _, c := range []struct {
		nodes, ready, to int
		want             *apperr.Code // nil: scalable
	}{
		{1, 1, 3, nil},
		{1, 1, 5, nil},
		{3, 3, 5, nil},
		{1, 0, 3, &apperr.WouldLoseQuorum}, // its only member not ready: the second voter's majority needs it
		{3, 2, 5, &apperr.WouldLoseQuorum},
		{3, 3, 3, &apperr.ControlPlaneUnchanged},
		{3, 3, 1, &apperr.InvalidControlPlaneCount}, // shrinking is not served yet
	} {
		err := scalable(controlPlane(c.nodes, c.ready), c.to)
		e, _ := apperr.As(err)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%d nodes, %d ready, to %d: %v, want scalable", c.nodes, c.ready, c.to, err)
		case c.want != nil && (e == nil || e.Code != *c.want):
			t.Errorf("%d nodes, %d ready, to %d: %v, want %s", c.nodes, c.ready, c.to, err, *c.want)
		}
	}
}
