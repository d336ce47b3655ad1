package apitypes

import "time"

// Condition is one observation of a resource, in the shape of Cluster
// API's and Kubernetes' conditions: its Type, whether it holds (Status),
// a CamelCase Reason a program may switch on, a Message a human reads,
// and when Status last changed. Clusters, node pools and node
// replacements carry ConditionReady and ConditionProgressing; they are
// the truth of where the resource stands (status_reason and state_reason
// repeat the message for older clients).
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"last_transition_time"`
}

// The condition types.
const (
	// ConditionReady: the resource is what was asked for (a cluster
	// active, a pool active, a replacement done). Its reason is the
	// resource's state in CamelCase.
	ConditionReady = "Ready"
	// ConditionProgressing: an operation of the resource runs. Its reason
	// is the operation's (InProgress, Retrying, TurningBack while True;
	// Succeeded, Failed, Superseded once it ended).
	ConditionProgressing = "Progressing"
)

// The condition statuses.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)
