package progress

import (
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// reportableList is clusterfacts.ReportableBy(role) as errors name it.
func reportableList(role clusterfacts.Role) string {
	var out []string
	for _, p := range clusterfacts.ReportableBy(role) {
		out = append(out, string(p))
	}
	return strings.Join(out, ", ")
}

// State is the bootstrap state of a whole cluster.
type State string

// The cluster states.
const (
	StatePending       State = "pending"       // no node is past pending
	StateBootstrapping State = "bootstrapping" // some node moved, not all are ready
	StateReady         State = "ready"         // every node is ready
	StateFailed        State = "failed"        // some node failed
)

// ClusterState is the one place a cluster's bootstrap state is computed
// from its nodes' phases. A cluster without nodes is pending.
func ClusterState(phases []clusterfacts.Phase) State {
	switch {
	case slices.Contains(phases, clusterfacts.Failed):
		return StateFailed
	case len(phases) == 0 || all(phases, clusterfacts.Pending):
		return StatePending
	case all(phases, clusterfacts.Ready):
		return StateReady
	}
	return StateBootstrapping
}

func all(phases []clusterfacts.Phase, p clusterfacts.Phase) bool {
	return !slices.ContainsFunc(phases, func(q clusterfacts.Phase) bool { return q != p })
}

// States lists every cluster state.
func States() []State { return []State{StatePending, StateBootstrapping, StateReady, StateFailed} }
