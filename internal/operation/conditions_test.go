package operation

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/store"
)

// A resource's conditions: Ready from its state, Progressing from its
// latest operation, each changing when that operation began or ended.
func TestConditions(t *testing.T) {
	began, ended := t0.Add(time.Minute), t0.Add(2*time.Minute)
	running := &store.OpRecord{Kind: store.KindDeletion, State: store.OpRunning, Reason: store.ReasonRetrying, CreatedAt: began}
	failed := &store.OpRecord{Kind: store.KindFounding, State: store.OpFailed, Reason: store.ReasonFailed, CreatedAt: began, EndedAt: &ended}
	done := &store.OpRecord{Kind: store.KindFounding, State: store.OpSucceeded, Reason: store.ReasonSucceeded, CreatedAt: began, EndedAt: &ended}
	cases := []struct {
		name string
		o    Observed
		want [2]apitypes.Condition
	}{
		{"active", Observed{State: "active", ReadyIn: "active", Op: done, CreatedAt: t0}, [2]apitypes.Condition{
			{Type: "Ready", Status: "True", Reason: "Active", LastTransitionTime: ended},
			{Type: "Progressing", Status: "False", Reason: "Succeeded", LastTransitionTime: ended}}},
		{"deletion retried", Observed{State: "deleting", ReadyIn: "active", Message: "compute_failed", Op: running, CreatedAt: t0},
			[2]apitypes.Condition{
				{Type: "Ready", Status: "False", Reason: "Deleting", Message: "compute_failed", LastTransitionTime: began},
				{Type: "Progressing", Status: "True", Reason: "Retrying", Message: "compute_failed", LastTransitionTime: began}}},
		{"founding undone", Observed{State: "failed", ReadyIn: "active", Message: "no capacity", Op: failed, CreatedAt: t0},
			[2]apitypes.Condition{
				{Type: "Ready", Status: "False", Reason: "Failed", Message: "no capacity", LastTransitionTime: ended},
				{Type: "Progressing", Status: "False", Reason: "Failed", Message: "no capacity", LastTransitionTime: ended}}},
		{"no operation recorded", Observed{State: "active", ReadyIn: "active", CreatedAt: t0}, [2]apitypes.Condition{
			{Type: "Ready", Status: "True", Reason: "Active", LastTransitionTime: t0},
			{Type: "Progressing", Status: "Unknown", Reason: "NotRecorded", LastTransitionTime: t0}}},
	}
	for _, c := range cases {
		got := Conditions(c.o)
		if len(got) != 2 || got[0] != c.want[0] || got[1] != c.want[1] {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
