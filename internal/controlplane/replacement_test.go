package controlplane

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
)

// controlPlane is n control-plane nodes (VMs 1..n), the first ready of
// them ready.
func controlPlane(n, ready int) []store.Node {
	at := time.Now()
	var out []store.Node
	for i := 1; i <= n; i++ {
		node := store.Node{ID: int64(i), VMID: int64(i), Ordinal: i, Name: clusterspec.NodeName(i, 7)}
		if i <= ready {
			node.ReadyAt = &at
		}
		out = append(out, node)
	}
	return out
}

// Replacing keeps etcd's quorum: a majority of the other members ready.
func TestReplaceableKeepsQuorum(t *testing.T) {
	for _, c := range []struct {
		nodes, ready int
		vm           int64
		want         *apperr.Code // nil: replaceable
	}{
		{1, 1, 1, &apperr.WouldLoseQuorum}, // the only member
		{3, 3, 1, nil},
		{3, 2, 1, &apperr.WouldLoseQuorum}, // of the others, one ready: not a majority of two
		{3, 2, 3, nil},                     // the node not ready is the one replaced
		{5, 4, 5, nil},
		{5, 3, 5, nil}, // three of the four others
		{5, 2, 5, &apperr.WouldLoseQuorum},
		{3, 3, 9, &apperr.NotFound},
	} {
		_, err := replaceable(controlPlane(c.nodes, c.ready), c.vm)
		e, _ := apperr.As(err)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%d nodes, %d ready, replacing VM %d: %v, want replaceable", c.nodes, c.ready, c.vm, err)
		case c.want != nil && (e == nil || e.Code != *c.want):
			t.Errorf("%d nodes, %d ready, replacing VM %d: %v, want %s", c.nodes, c.ready, c.vm, err, *c.want)
		}
	}
}

// A node already retiring is neither replaced twice nor counted.
func TestRetiringNodeIsNotReplacedAgain(t *testing.T) {
	nodes := controlPlane(3, 3)
	nodes[0].Retiring = true
	if _, err := replaceable(nodes, 1); err == nil {
		t.Error("a retiring node was replaceable")
	}
	if _, err := replaceable(nodes, 2); err == nil {
		t.Error("replacing a second node while the first retires left one of two others: want would_lose_quorum")
	}
}
