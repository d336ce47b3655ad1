package progress

import (
	"cmp"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// Timeline is one node's bootstrap as recorded: its phase, when its
// bootstrap opened, when it first reached each phase (store.Node's
// PhaseTimes), its last report, its role and whether it is its cluster's
// initial node (the one with addons).
type Timeline struct {
	Role      clusterfacts.Role
	Phase     clusterfacts.Phase
	OpenedAt  time.Time
	Reached   map[string]time.Time
	UpdatedAt time.Time
	Initial   bool
}

// reached is one phase the node reached, and when.
type reached struct {
	phase clusterfacts.Phase
	at    time.Time
}

// Steps are the steps the node finished, in the order it reached their
// phases. A step runs from the phase the node reached before it (or its
// bootstrap's opening, for the first) to the moment it reached its own:
// phases are milestones the VM reports, so a step is named by the
// milestone it reaches (prerequisites_installed is the time the
// prerequisites took to install). A phase it skipped (no report) has no step: the next one starts
// where the last reached phase ended. A spelling that is no phase (never
// written by k8sapi) is left out.
func (t Timeline) Steps() []apitypes.BootstrapStep {
	steps := []apitypes.BootstrapStep{}
	start := t.OpenedAt
	for _, r := range t.inOrder() {
		// The two clocks (the opening's, the database's) may disagree by a
		// little: a step never lasts less than nothing.
		steps = append(steps, apitypes.BootstrapStep{Phase: string(r.phase), StartedAt: start, EndedAt: r.at, Seconds: max(0, r.at.Sub(start).Seconds())})
		start = r.at
	}
	return steps
}

// inOrder is the reached phases by time, then by the phase table's order.
func (t Timeline) inOrder() []reached {
	var out []reached
	for name, at := range t.Reached {
		if p, err := clusterfacts.ParsePhase(name); err == nil && p != clusterfacts.Pending {
			out = append(out, reached{p, at})
		}
	}
	slices.SortFunc(out, func(a, b reached) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(rankOf(a.phase), rankOf(b.phase)))
	})
	return out
}

func rankOf(p clusterfacts.Phase) int { return slices.Index(clusterfacts.Phases(), p) }

// Running is the step the node works on now, nil once it is ready or
// failed. It started when the node reached its current phase; a node whose
// phase has no recorded time (moved before times were recorded) counts
// from its last report, a pending one from its bootstrap's opening.
func (t Timeline) Running() *apitypes.RunningStep {
	next, ok := clusterfacts.Next(t.Phase, t.Role, t.Initial)
	if !ok {
		return nil
	}
	since, known := t.Reached[string(t.Phase)]
	switch {
	case t.Phase == clusterfacts.Pending:
		since = t.OpenedAt
	case !known:
		since = t.UpdatedAt
	}
	return &apitypes.RunningStep{Phase: string(next), StartedAt: since}
}
