package clusterspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/validation"
)

// The remediation settings' defaults and bounds (docs/NODE-HEALTH.md), as
// Cluster API's MachineHealthCheck: a node unhealthy for longer than
// unhealthy_after is replaced ("0": never); a worker only while at most
// max_unhealthy_percent of its pool is unhealthy, so a cause that takes
// out many nodes at once (a network partition, k8sapi itself unreachable)
// does not become a storm of replacements. Migration 026's CHECKs repeat
// the bounds.
const (
	DefaultUnhealthyAfter      = 5 * time.Minute
	MinUnhealthyAfter          = time.Minute
	MaxUnhealthyAfter          = 24 * time.Hour
	DefaultMaxUnhealthyPercent = 40
)

// unhealthyAfterOf parses a request's unhealthy_after: a Go duration
// ("5m", "90s") of whole seconds, or "0"; false when it is none.
func unhealthyAfterOf(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	if err != nil || d%time.Second != 0 {
		return 0, false
	}
	return d, d == 0 || d >= MinUnhealthyAfter && d <= MaxUnhealthyAfter
}

// RemediationChange is a request's remediation settings as given, each
// nil when absent: a founding's (Spec keeps them so) or a patch's (the
// settings it changes).
type RemediationChange struct {
	UnhealthyAfterSeconds *int
	MaxUnhealthyPercent   *int
}

// Any: the change gives a setting.
func (c RemediationChange) Any() bool {
	return c.UnhealthyAfterSeconds != nil || c.MaxUnhealthyPercent != nil
}

// Describe is the change as the trail keeps it: each setting given, from
// the value the cluster had (old...) to the new, as GET /clusters/{id}
// shows them.
func (c RemediationChange) Describe(oldUnhealthyAfterSeconds, oldMaxUnhealthyPercent int) string {
	var parts []string
	if c.UnhealthyAfterSeconds != nil {
		parts = append(parts, fmt.Sprintf("unhealthy_after %s → %s", seconds(oldUnhealthyAfterSeconds), seconds(*c.UnhealthyAfterSeconds)))
	}
	if c.MaxUnhealthyPercent != nil {
		parts = append(parts, fmt.Sprintf("max_unhealthy_percent %d → %d", oldMaxUnhealthyPercent, *c.MaxUnhealthyPercent))
	}
	return strings.Join(parts, ", ")
}

func seconds(n int) string { return (time.Duration(n) * time.Second).String() }

// remediationChange is the settings given (remediationRules refuses a
// bad one first).
func remediationChange(unhealthyAfter *string, maxUnhealthyPercent *int) RemediationChange {
	c := RemediationChange{MaxUnhealthyPercent: maxUnhealthyPercent}
	if unhealthyAfter != nil {
		d, _ := unhealthyAfterOf(*unhealthyAfter)
		secs := int(d / time.Second)
		c.UnhealthyAfterSeconds = &secs
	}
	return c
}

// remediationSpec is the request's settings as given (nil: absent, so a
// request without them keeps the fingerprint it had before they existed).
func remediationSpec(r Request, s *Spec) {
	c := remediationChange(r.UnhealthyAfter, r.MaxUnhealthyPercent)
	s.UnhealthyAfterSeconds, s.MaxUnhealthyPercent = c.UnhealthyAfterSeconds, c.MaxUnhealthyPercent
}

// remediationRules: unhealthy_after and max_unhealthy_percent, when given
// (POST /clusters and PATCH /clusters/{id} both).
func remediationRules(unhealthyAfter *string, maxUnhealthyPercent *int) []validation.Rule {
	_, durationOK := unhealthyAfterOf(valueOr(unhealthyAfter, "0"))
	percent := valueOr(maxUnhealthyPercent, DefaultMaxUnhealthyPercent)
	return []validation.Rule{
		rule("unhealthy_after", durationOK, fmt.Sprintf(`must be "0" (remediation off) or a duration of whole seconds from %s to %s, such as "5m"`,
			MinUnhealthyAfter, MaxUnhealthyAfter)),
		rule("max_unhealthy_percent", percent >= 0 && percent <= 100, "must be 0 to 100"),
	}
}

// Remediation is the spec's settings with defaults: how long a node may be
// unhealthy before it is replaced (0: never) and the share of a pool that
// may be unhealthy for its workers to be replaced.
func (s Spec) Remediation() (unhealthyAfter time.Duration, maxUnhealthyPercent int) {
	unhealthyAfter = DefaultUnhealthyAfter
	if s.UnhealthyAfterSeconds != nil {
		unhealthyAfter = time.Duration(*s.UnhealthyAfterSeconds) * time.Second
	}
	return unhealthyAfter, valueOr(s.MaxUnhealthyPercent, DefaultMaxUnhealthyPercent)
}
