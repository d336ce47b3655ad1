package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// healthOf is a node's health as a table cell: healthy, unknown, or
// "unhealthy 3m" (for how long); "<none>" from a server that has none.
func healthOf(now time.Time, h apitypes.NodeHealth) string {
	if h.Health == apitypes.Unhealthy && h.UnhealthySince != nil {
		return h.Health + " " + age(now, *h.UnhealthySince)
	}
	return orNone(h.Health)
}

// healthLine is a node's health as describe says it: since when and why
// it is unhealthy, or when it last reported.
func healthLine(h apitypes.NodeHealth) string {
	switch {
	case h.Health == apitypes.Unhealthy && h.UnhealthySince != nil:
		return fmt.Sprintf("unhealthy since %s: %s", timestamp(*h.UnhealthySince), h.UnhealthyReason)
	case h.HealthReportedAt != nil:
		return h.Health + ", last report " + timestamp(*h.HealthReportedAt)
	}
	return orNone(h.Health)
}

// requestedAPIs are a node's deprecated APIs requested in the last day,
// as describe says them: "flowschemas flowcontrol.apiserver.k8s.io/v1beta3
// (removed in 1.32, last 2026-12-03T10:00:00Z)", one a line.
func requestedAPIs(apis []apitypes.RequestedAPI) string {
	lines := make([]string, 0, len(apis))
	for _, a := range apis {
		lines = append(lines, fmt.Sprintf("%s (removed in %s, last %s)", a.Name(), orNone(a.RemovedRelease), timestamp(a.LastSeen)))
	}
	return strings.Join(lines, "\n"+strings.Repeat(" ", 24))
}

// remediation is the cluster's remediation settings as describe says them.
func remediation(cl apitypes.ClusterView) string {
	switch cl.UnhealthyAfter {
	case "":
		return "<none>"
	case "0s":
		return "off (unhealthy_after 0)"
	}
	return fmt.Sprintf("a node unhealthy for %s is replaced (workers while at most %d%% of their pool is unhealthy)",
		cl.UnhealthyAfter, cl.MaxUnhealthyPercent)
}
