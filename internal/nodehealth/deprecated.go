package nodehealth

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/validation"
)

// The bounds of a report's deprecated APIs (the health script renders the
// same, bundle.healthView, and leaves out what they refuse, so a node
// never loses its report to them): at most MaxDeprecatedAPIs, a group a
// DNS subdomain's length at most, every other name a DNS label's, and a
// removal release a minor ("1.36") or none.
const (
	MaxDeprecatedAPIs     = store.MaxDeprecatedAPIsKept
	MaxDeprecatedGroupLen = 253
	MaxDeprecatedNameLen  = 63
)

// DeprecatedNamePattern is every name of a deprecated API: what
// Kubernetes' group, version and resource names are made of.
const DeprecatedNamePattern = `^[a-zA-Z0-9.-]*$`

var (
	deprecatedName    = regexp.MustCompile(DeprecatedNamePattern)
	removedReleaseFmt = regexp.MustCompile(`^([0-9]{1,3}\.[0-9]{1,3})?$`)
)

// deprecatedAPIRules is the one table of a report's deprecated APIs: a
// worker has no API server to ask, a control-plane node's list is bounded,
// and each API is named once, by bounded names.
func deprecatedAPIRules(role clusterfacts.Role, apis []apitypes.DeprecatedAPI) []validation.Rule {
	rules := []validation.Rule{
		validation.Check("deprecated_apis", apis == nil || role == clusterfacts.ControlPlane, "is a control-plane node's only (a worker has no API server)"),
		validation.Check("deprecated_apis", len(apis) <= MaxDeprecatedAPIs, fmt.Sprintf("must hold at most %d APIs", MaxDeprecatedAPIs)),
	}
	for i, a := range apis {
		rules = append(rules, deprecatedAPIRow(fmt.Sprintf("deprecated_apis[%d]", i), a, slices.Contains(apis[:i], a))...)
	}
	return rules
}

// deprecatedAPIRow is the table's rows of one API (field its path).
func deprecatedAPIRow(field string, a apitypes.DeprecatedAPI, duplicate bool) []validation.Rule {
	return []validation.Rule{
		nameRule(field+".group", a.Group, false, MaxDeprecatedGroupLen),
		nameRule(field+".version", a.Version, true, MaxDeprecatedNameLen),
		nameRule(field+".resource", a.Resource, true, MaxDeprecatedNameLen),
		nameRule(field+".subresource", a.Subresource, false, MaxDeprecatedNameLen),
		validation.Check(field+".removed_release", removedReleaseFmt.MatchString(a.RemovedRelease), `must be a release such as "1.36", or ""`),
		validation.Check(field, !duplicate, "is a duplicate"),
	}
}

// nameRule: a name of letters, digits, '.' and '-', at most max bytes,
// not empty when required.
func nameRule(field, name string, required bool, max int) validation.Rule {
	ok := len(name) <= max && deprecatedName.MatchString(name) && (name != "" || !required)
	what := fmt.Sprintf("must be letters, digits, '.' and '-', at most %d bytes", max)
	if required {
		what = "is required; " + what
	}
	return validation.Check(field, ok, what)
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
