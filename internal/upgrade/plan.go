package upgrade

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/bundle"
)

// minorOf is the minor of a version spelled v1.36.3 or 1.36; -1 when it
// is spelled otherwise.
func minorOf(version string) int {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 {
		return -1
	}
	m, err := strconv.Atoi(parts[1])
	if err != nil {
		return -1
	}
	return m
}

// passesTo is the chain of one-pass upgrades from from to to by the
// release table's paths: each pass goes to to itself where the table
// allows it, or else to the furthest release not past to's minor.
func passesTo(from, to string) ([]apitypes.UpgradePass, error) {
	if _, ok := artifacts.ReleaseOf(to); !ok {
		return nil, apperr.InvalidField.Detailf("kubernetes_version: must be a supported Kubernetes version: %s", artifacts.SupportedList())
	}
	var out []apitypes.UpgradePass
	for at := from; at != to; {
		next, ok := nextPass(at, to)
		if !ok {
			return nil, apperr.UpgradeNoPath.Detailf("the release table has no upgrade path from %s to %s (GET /kubernetes-versions lists each release's paths)", from, to)
		}
		out = append(out, apitypes.UpgradePass{From: at, To: next})
		at = next
	}
	if len(out) == 0 {
		return nil, apperr.UpgradeNoPath.Detailf("the cluster is at %s already", to)
	}
	return out, nil
}

// nextPass is where one pass from at goes toward to.
func nextPass(at, to string) (string, bool) {
	r, ok := artifacts.ReleaseOf(at)
	if !ok {
		return "", false
	}
	if slices.Contains(r.UpgradesTo, to) {
		return to, true
	}
	best := ""
	for _, v := range r.UpgradesTo {
		if minorOf(v) <= minorOf(to) && (best == "" || minorOf(v) > minorOf(best)) {
			best = v
		}
	}
	return best, best != ""
}

// Defaults and bounds of a request's surge and drain timeout (the
// migration's CHECKs hold the same bounds). The drain timeout's are the
// bounds a worker takes from k8sapi (bundle.MinDrainSeconds, its units'
// timeouts allow the longest).
const (
	DefaultSurge               = 1
	MaxSurge                   = 10
	DefaultDrainTimeoutSeconds = 300
	MinDrainTimeoutSeconds     = bundle.MinDrainSeconds
	MaxDrainTimeoutSeconds     = bundle.MaxDrainSeconds
)

// settings are a request's surge and drain timeout, defaulted and checked.
func settings(r apitypes.UpgradeRequest) (surge, drain int, err error) {
	surge, drain = DefaultSurge, DefaultDrainTimeoutSeconds
	if r.Surge != nil {
		surge = *r.Surge
	}
	if r.DrainTimeoutSeconds != nil {
		drain = *r.DrainTimeoutSeconds
	}
	var errs []string
	if surge < 1 || surge > MaxSurge {
		errs = append(errs, fmt.Sprintf("surge: must be from 1 to %d", MaxSurge))
	}
	if drain < MinDrainTimeoutSeconds || drain > MaxDrainTimeoutSeconds {
		errs = append(errs, fmt.Sprintf("drain_timeout_seconds: must be from %d to %d", MinDrainTimeoutSeconds, MaxDrainTimeoutSeconds))
	}
	if r.KubernetesVersion == "" {
		errs = append(errs, "kubernetes_version: is required")
	}
	if len(errs) > 0 {
		return 0, 0, apperr.InvalidField.Detail(strings.Join(errs, "; "))
	}
	return surge, drain, nil
}
