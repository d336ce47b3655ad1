package clusterfacts

import (
	"testing"

	"github.com/excloud/k8sapi/internal/store"
)

// A node made after the founding (by a replacement or a control-plane
// scaling) joins the running etcd; a founding's node founds it.
func TestNodesMadeAfterFoundingJoin(t *testing.T) {
	for _, c := range []struct {
		row  store.Node
		want bool
	}{
		{store.Node{Ordinal: 1}, false},
		{store.Node{Ordinal: 4, ReplacementID: 2}, true},
		{store.Node{Ordinal: 2, ScalingID: 1}, true},
	} {
		if got := NodeOf(c.row).Joins; got != c.want {
			t.Errorf("%+v joins: %v, want %v", c.row, got, c.want)
		}
	}
}
