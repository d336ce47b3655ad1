package nodehealth

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/validation"
)

var (
	deprecatedName = regexp.MustCompile(apitypes.DeprecatedNamePattern)
	removedRelease = regexp.MustCompile(apitypes.RemovedReleasePattern)
)

// deprecatedAPIRules is the one table of a report's deprecated APIs: a
// worker has no API server to ask, a control-plane node's list is bounded,
// and each API is named once, by bounded names.
func deprecatedAPIRules(role clusterfacts.Role, apis []apitypes.DeprecatedAPI) []validation.Rule {
	rules := []validation.Rule{
		validation.Check("deprecated_apis", apis == nil || role == clusterfacts.ControlPlane, "is a control-plane node's only (a worker has no API server)"),
		validation.Check("deprecated_apis", len(apis) <= apitypes.MaxDeprecatedAPIs, fmt.Sprintf("must hold at most %d APIs", apitypes.MaxDeprecatedAPIs)),
	}
	for i, a := range apis {
		rules = append(rules, deprecatedAPIRow(fmt.Sprintf("deprecated_apis[%d]", i), a, slices.Contains(apis[:i], a))...)
	}
	return rules
}

// deprecatedAPIRow is the table's rows of one API (field its path).
func deprecatedAPIRow(field string, a apitypes.DeprecatedAPI, duplicate bool) []validation.Rule {
	return []validation.Rule{
		nameRule(field+".group", a.Group, false, apitypes.MaxDeprecatedGroupLen),
		nameRule(field+".version", a.Version, true, apitypes.MaxDeprecatedNameLen),
		nameRule(field+".resource", a.Resource, true, apitypes.MaxDeprecatedNameLen),
		nameRule(field+".subresource", a.Subresource, false, apitypes.MaxDeprecatedNameLen),
		validation.Check(field+".removed_release", removedRelease.MatchString(a.RemovedRelease), `must be a release such as "1.36", or ""`),
		validation.Check(field, !duplicate, "is a duplicate"),
	}
}

// nameRule: a name of letters, digits, '.' and '-', at most max bytes,
// not empty when required.
func nameRule(field, name string, required bool, max int) validation.Rule {
	ok := len(name) <= max && deprecatedName.MatchString(name) && (name != "" || !required)
	least := map[bool]int{true: 1, false: 0}[required]
	return validation.Check(field, ok, fmt.Sprintf("must be %d to %d bytes of letters, digits, '.' and '-'", least, max))
}

// storedAPIs is the report's deprecated APIs as the store records them
// (nil: the report has none to say).
func (r Report) storedAPIs() []store.DeprecatedAPI {
	if r.DeprecatedAPIs == nil {
		return nil
	}
	out := make([]store.DeprecatedAPI, 0, len(r.DeprecatedAPIs))
	for _, a := range r.DeprecatedAPIs {
		out = append(out, store.DeprecatedAPI{Group: a.Group, Version: a.Version, Resource: a.Resource,
			Subresource: a.Subresource, RemovedRelease: a.RemovedRelease})
	}
	return out
}

// requestedSince are n's recorded deprecated APIs last reported after
// since (the upgrade gate's day), as the API shows them.
func requestedSince(n store.Node, since time.Time) []apitypes.RequestedAPI {
	var out []apitypes.RequestedAPI
	for _, a := range n.DeprecatedAPIs {
		if a.LastSeen.After(since) {
			out = append(out, apitypes.RequestedAPI{LastSeen: a.LastSeen, DeprecatedAPI: apitypes.DeprecatedAPI{Group: a.Group,
				Version: a.Version, Resource: a.Resource, Subresource: a.Subresource, RemovedRelease: a.RemovedRelease}})
		}
	}
	return out
}
