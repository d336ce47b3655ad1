package clusterspec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/validation"
)

// Limits of a node pool request, in one place (the API description repeats
// them; migration 017's CHECKs hold the stored ones).
const (
	MaxPoolNameLen = 32
	MaxPoolCount   = 100
	MaxPoolLabels  = 32
	MaxPoolTaints  = 16
)

// TaintEffects are the effects a taint may have (the kubelet's).
var TaintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// PoolRequest is the body of POST /clusters/{id}/node-pools. Pointers tell
// "absent" from zero.
type PoolRequest struct {
	Name         *string           `json:"name"`
	Count        *int              `json:"count"`
	InstanceType *string           `json:"instance_type"`
	ImageID      *int64            `json:"image_id"`
	SubnetID     *int64            `json:"subnet_id"`
	Labels       map[string]string `json:"labels"`
	Taints       []apitypes.Taint  `json:"taints"`
}

// PoolSpec is a validated PoolRequest; SubnetID 0 is the cluster's subnet.
type PoolSpec struct {
	Name         string            `json:"name"`
	Count        int               `json:"count"`
	InstanceType string            `json:"instance_type"`
	ImageID      int64             `json:"image_id"`
	SubnetID     int64             `json:"subnet_id"`
	Labels       map[string]string `json:"labels"`
	Taints       []apitypes.Taint  `json:"taints"`
}

// ScaleRequest is the body of PATCH /clusters/{id}/node-pools/{pool}.
type ScaleRequest struct {
	Count *int `json:"count"`
}

var (
	poolNamePattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$`)
	// A label or taint key's name part, and a label value (Kubernetes'
	// qualified name and label value syntax).
	qualifiedNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValuePattern    = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	dnsSubdomainPattern  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

// Validate returns every problem at once, each with its field name, as one 400.
func (r PoolRequest) Validate() (PoolSpec, error) {
	s := r.spec()
	if err := invalid(r.rules(s)...); err != nil {
		return PoolSpec{}, err
	}
	return s, nil
}

// spec is r with its absent fields at their defaults; rules say whether
// it is valid.
func (r PoolRequest) spec() PoolSpec {
	s := PoolSpec{Name: valueOr(r.Name, ""), Count: valueOr(r.Count, -1), InstanceType: strings.TrimSpace(valueOr(r.InstanceType, "")),
		ImageID: valueOr(r.ImageID, 0), SubnetID: valueOr(r.SubnetID, 0), Labels: r.Labels, Taints: r.Taints}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Taints == nil {
		s.Taints = []apitypes.Taint{}
	}
	return s
}

// rules are a pool's tables over r and its spec s.
func (r PoolRequest) rules(s PoolSpec) [][]validation.Rule {
	return [][]validation.Rule{poolRules(r, s), labelRules(s.Labels), taintRules(s.Taints)}
}

// Validate is the new count, or the 400 that says what is wrong with it.
func (r ScaleRequest) Validate() (int, error) {
	return valueOr(r.Count, 0), invalid([]validation.Rule{
		rule("count", r.Count != nil, "is required"),
		countRule(r.Count),
	})
}

// invalid is the 400 of the failing rows of tables, nil when none fails.
func invalid(tables ...[]validation.Rule) error {
	if errs := validation.Errors(tables...); len(errs) > 0 {
		return apperr.InvalidRequest.Detail(joinMessages(errs)).WithCause(errors.Join(errs...))
	}
	return nil
}

func countRule(count *int) validation.Rule {
	return rule("count", count == nil || *count >= 0 && *count <= MaxPoolCount, fmt.Sprintf("must be 0 to %d", MaxPoolCount))
}

// poolRules: the name, count, instance type, image and subnet.
func poolRules(r PoolRequest, s PoolSpec) []validation.Rule {
	return []validation.Rule{
		rule("name", r.Name != nil, "is required"),
		rule("name", r.Name == nil || poolNamePattern.MatchString(s.Name),
			fmt.Sprintf("must be a DNS label: lowercase letters, digits and '-', starting with a letter, at most %d characters", MaxPoolNameLen)),
		rule("count", r.Count != nil, "is required"),
		countRule(r.Count),
		rule("instance_type", s.InstanceType != "", "is required"),
		rule("instance_type", s.InstanceType == "" || len(s.InstanceType) <= MaxInstanceTypeLen && instanceTypePattern.MatchString(s.InstanceType),
			fmt.Sprintf("must be lowercase letters, digits, '.' and '-', at most %d characters", MaxInstanceTypeLen)),
		rule("image_id", r.ImageID != nil, "is required"),
		rule("image_id", r.ImageID == nil || s.ImageID > 0, "must be a positive integer"),
		rule("subnet_id", r.SubnetID == nil || s.SubnetID > 0, "must be a positive integer"),
	}
}

// labelRules: at most MaxPoolLabels, each a key a kubelet may set on its
// own Node and a label value. Keys in order, so the message is stable.
func labelRules(labels map[string]string) []validation.Rule {
	rules := []validation.Rule{rule("labels", len(labels) <= MaxPoolLabels, fmt.Sprintf("must hold at most %d labels", MaxPoolLabels))}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := fmt.Sprintf("labels[%q]", k)
		rules = append(rules, keyRule(field, k), rule(field, labelValuePattern.MatchString(labels[k]),
			"value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
			rule(field, k != bundle.WorkerPoolLabel, "is k8sapi's own: every worker carries it, its value the pool's name"))
	}
	return rules
}

// taintRules: at most MaxPoolTaints, each a key, a label value and an
// effect, no key and effect twice.
func taintRules(taints []apitypes.Taint) []validation.Rule {
	rules := []validation.Rule{rule("taints", len(taints) <= MaxPoolTaints, fmt.Sprintf("must hold at most %d taints", MaxPoolTaints))}
	for i, t := range taints {
		field := fmt.Sprintf("taints[%d]", i)
		rules = append(rules, keyRule(field+".key", t.Key),
			rule(field+".value", labelValuePattern.MatchString(t.Value), "must be at most 63 letters, digits, '-', '_' or '.'"),
			rule(field+".effect", slices.Contains(TaintEffects, t.Effect), "must be one of "+strings.Join(TaintEffects, ", ")),
			rule(field, !slices.ContainsFunc(taints[:i], func(o apitypes.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }),
				"repeats an earlier taint's key and effect"))
	}
	return rules
}

// keyRule: a qualified name ("[prefix/]name"), whose prefix is not one of
// Kubernetes' own (a kubelet may set only node.kubernetes.io/ and
// kubelet.kubernetes.io/ ones on its Node: NodeRestriction refuses the rest).
func keyRule(field, key string) validation.Rule {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		prefix, name = "", key
	}
	ok := qualifiedNamePattern.MatchString(name) && (!hasPrefix || dnsSubdomainPattern.MatchString(prefix)) && !reservedPrefix(prefix)
	return rule(field, ok, "key must be [prefix/]name: a DNS subdomain prefix outside kubernetes.io and k8s.io "+
		"(but node.kubernetes.io and kubelet.kubernetes.io), a name of at most 63 letters, digits, '-', '_' or '.'")
}

func reservedPrefix(prefix string) bool {
	if prefix == "node.kubernetes.io" || prefix == "kubelet.kubernetes.io" ||
		strings.HasSuffix(prefix, ".node.kubernetes.io") || strings.HasSuffix(prefix, ".kubelet.kubernetes.io") {
		return false
	}
	for _, domain := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == domain || strings.HasSuffix(prefix, "."+domain) {
			return true
		}
	}
	return false
}

// Fingerprint identifies the normalized request (see Spec.Fingerprint).
func (s PoolSpec) Fingerprint() string { return fingerprintOf(s) }

// TaintRows are a request's taints as the store keeps them.
func TaintRows(taints []apitypes.Taint) []store.Taint {
	return convert(taints, func(t apitypes.Taint) store.Taint { return store.Taint(t) })
}

// TaintsOf are a pool's stored taints as the API shows them (in the pool
// and in a worker's bundle).
func TaintsOf(rows []store.Taint) []apitypes.Taint {
	return convert(rows, func(t store.Taint) apitypes.Taint { return apitypes.Taint(t) })
}

// convert is each of in as f makes it; nil stays nil (so the wire's null
// or [] is the row's).
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
