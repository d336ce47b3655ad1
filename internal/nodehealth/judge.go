package nodehealth

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/store"
)

// ReportEvery is how often a node reports (its timer, in the bundle), and
// Grace how long k8sapi waits past a report before it judges a silent node
// unhealthy: three missed reports, so one lost report or a slow minute of
// k8sapi's is no failure.
const (
	ReportEvery = bundle.HealthEvery
	Grace       = 3 * ReportEvery
)

// Judgment is a node's health at one moment, as k8sapi judges it.
type Judgment struct {
	State string // apitypes.Healthy, Unhealthy or HealthUnknown
	// Since is when the node became unhealthy: its first report that named
	// a failing check, or, for a node that stopped reporting, its last
	// report (it has not been heard from since). Reason says which.
	Since  time.Time
	Reason string
}

// Judge is n's health at now. A node that never reported is unknown:
// still bootstrapping, or running a bundle from before the reports
// (never remediated: nothing says it is unwell).
func Judge(n store.Node, now time.Time) Judgment {
	h := n.Health
	switch {
	case h.ReportedAt == nil:
		return Judgment{State: apitypes.HealthUnknown}
	case now.Sub(*h.ReportedAt) > Grace:
		return Judgment{State: apitypes.Unhealthy, Since: *h.ReportedAt,
			Reason: fmt.Sprintf("no health report since %s", h.ReportedAt.UTC().Format(time.RFC3339))}
	case h.FailingSince != nil:
		return Judgment{State: apitypes.Unhealthy, Since: *h.FailingSince, Reason: "failing: " + failingChecks(h.Checks)}
	}
	return Judgment{State: apitypes.Healthy}
}

// unhealthyFor says whether n, judged j, has been unhealthy for longer
// than after.
func (j Judgment) unhealthyFor(after time.Duration, now time.Time) bool {
	return j.State == apitypes.Unhealthy && now.Sub(j.Since) > after
}

// checksOf are a report's recorded checks (nil: none, or unreadable).
func checksOf(raw []byte) map[string]apitypes.HealthCheck {
	var checks map[string]apitypes.HealthCheck
	if len(raw) > 0 && json.Unmarshal(raw, &checks) != nil {
		return nil
	}
	return checks
}

// failingChecks names the failing checks of a recorded report, each with
// what the node saw.
func failingChecks(raw []byte) string {
	checks := checksOf(raw)
	var failing []string
	for _, name := range sortedNames(checks) {
		if c := checks[name]; !c.OK {
			failing = append(failing, strings.TrimSpace(name+" "+c.Message))
		}
	}
	if len(failing) == 0 {
		return "a check"
	}
	return strings.Join(failing, "; ")
}

// View is n's health as the API shows it, at now.
func View(n store.Node, now time.Time) apitypes.NodeHealth {
	j := Judge(n, now)
	v := apitypes.NodeHealth{Health: j.State, HealthReportedAt: n.Health.ReportedAt, HealthChecks: checksOf(n.Health.Checks),
		DeprecatedAPIs: requestedSince(n, now.Add(-store.DeprecatedAPIsWithin))}
	if j.State == apitypes.Unhealthy {
		v.UnhealthySince, v.UnhealthyReason = &j.Since, j.Reason
	}
	return v
}

// Annotate fills the health of every node and worker of v from nodes (the
// cluster's rows), at now.
func Annotate(v *apitypes.ClusterView, nodes []store.Node, now time.Time) {
	byVM := ByVM(nodes, now)
	for i := range v.Nodes {
		v.Nodes[i].NodeHealth = byVM[v.Nodes[i].VMID]
	}
	for i := range v.NodePools {
		AnnotatePool(&v.NodePools[i], byVM)
	}
}

// AnnotatePool fills the health of p's workers from byVM.
func AnnotatePool(p *apitypes.NodePool, byVM map[int64]apitypes.NodeHealth) {
	for i := range p.Nodes {
		p.Nodes[i].NodeHealth = byVM[p.Nodes[i].VMID]
	}
}

// ByVM is the health of each of nodes at now, by VM.
func ByVM(nodes []store.Node, now time.Time) map[int64]apitypes.NodeHealth {
	out := map[int64]apitypes.NodeHealth{}
	for _, n := range nodes {
		out[n.VMID] = View(n, now)
	}
	return out
}
