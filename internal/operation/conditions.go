package operation

import (
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/store"
)

// Observed is what a resource's conditions are made of: its state, the
// one state in which it is ready, the message of its latest operation
// (what the use case knows it to be now), its latest operation (nil: none
// recorded) and when the resource was created.
type Observed struct {
	State, ReadyIn string
	Message        string
	Op             *store.OpRecord
	CreatedAt      time.Time
}

// Conditions are o's Ready and Progressing conditions: one rule for
// clusters, node pools and replacements.
func Conditions(o Observed) []apitypes.Condition {
	return []apitypes.Condition{o.ready(), o.progressing()}
}

func (o Observed) ready() apitypes.Condition {
	c := apitypes.Condition{Type: apitypes.ConditionReady, Status: apitypes.ConditionFalse, Reason: camel(o.State),
		Message: o.Message, LastTransitionTime: o.lastChange()}
	if o.State == o.ReadyIn {
		c.Status, c.Message = apitypes.ConditionTrue, ""
	}
	return c
}

func (o Observed) progressing() apitypes.Condition {
	if o.Op == nil {
		return apitypes.Condition{Type: apitypes.ConditionProgressing, Status: apitypes.ConditionUnknown,
			Reason: "NotRecorded", LastTransitionTime: o.CreatedAt}
	}
	c := apitypes.Condition{Type: apitypes.ConditionProgressing, Status: apitypes.ConditionFalse, Reason: o.Op.Reason,
		Message: o.Message, LastTransitionTime: o.lastChange()}
	if o.Op.Live() {
		c.Status = apitypes.ConditionTrue
	}
	return c
}

// lastChange is when the latest operation began, or ended if it did: the
// resource's state changes then.
func (o Observed) lastChange() time.Time {
	switch {
	case o.Op == nil:
		return o.CreatedAt
	case o.Op.EndedAt != nil:
		return *o.Op.EndedAt
	}
	return o.Op.CreatedAt
}

// camel is a state as a condition's reason: "founding" is "Founding".
func camel(state string) string {
	if state == "" {
		return "Unknown"
	}
	return strings.ToUpper(state[:1]) + state[1:]
}
