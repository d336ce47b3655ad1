package controlplane

import (
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
)

// A scaling grows a control plane all of whose members reported ready, or
// shrinks one whose first removal keeps the quorum; the count it has, or
// a change that could lose the quorum, is refused.
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
		{3, 3, 1, nil},
		{5, 5, 3, nil},
		{5, 3, 3, nil},                     // cp-4, cp-5 down: cp-5 leaves, 3 of the 4 that stay are ready
		{5, 2, 3, &apperr.WouldLoseQuorum}, // 2 of the 4 that stay
		{3, 1, 1, &apperr.WouldLoseQuorum}, // 1 of the 2 that stay
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

// The leaving member is the highest ordinal that is not the snapshot node
// (the lowest-ordinal ready one), which stays to do the removal.
func TestLeavingMember(t *testing.T) {
	cp := controlPlane(3, 3)
	if leaving, others := LeavingMember(cp); leaving.Ordinal != 3 || len(others) != 2 || RemovingMember(others).Ordinal != 1 {
		t.Fatalf("leaving %d, %d others, removing %d: want cp-3 leaving, cp-1 removing", leaving.Ordinal, len(others), RemovingMember(others).Ordinal)
	}
	cp[0].ReadyAt, cp[1].ReadyAt = nil, nil // cp-3 is the only ready one: the snapshot node
	if leaving, _ := LeavingMember(cp); leaving.Ordinal != 2 {
		t.Fatalf("leaving cp-%d, want cp-2 (cp-3 is the snapshot node)", leaving.Ordinal)
	}
}

// From two members to one, etcd commits the removal only with both: a
// dead leaving member of two cannot be removed.
func TestRemovalKeepsQuorum(t *testing.T) {
	two := controlPlane(2, 2)
	if err := removalKeepsQuorum(two[1], two[:1]); err != nil {
		t.Fatalf("2 ready → 1: %v", err)
	}
	two[1].ReadyAt = nil
	if e, _ := apperr.As(removalKeepsQuorum(two[1], two[:1])); e == nil || e.Code != apperr.WouldLoseQuorum {
		t.Fatalf("a dead member of two: %v, want would_lose_quorum", e)
	}
	four := controlPlane(4, 3) // cp-4 dead: removing it needs 3 of 4, and 2 of the 3 that stay
	if err := removalKeepsQuorum(four[3], four[:3]); err != nil {
		t.Fatalf("4 (3 ready) → 3: %v", err)
	}
}
