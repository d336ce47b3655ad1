package upgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/store"
)

// The chain follows the release table's paths; going nowhere, backwards
// or to an unknown version is refused with its code.
func TestPassesFollowTheTable(t *testing.T) {
	got, err := passesTo("v1.35.4", "v1.36.3")
	if err != nil || len(got) != 1 || got[0] != (apitypes.UpgradePass{From: "v1.35.4", To: "v1.36.3"}) {
		t.Errorf("v1.35.4 → v1.36.3 = %v, %v", got, err)
	}
	for _, c := range []struct{ from, to, code string }{
		{"v1.35.4", "v1.35.4", "upgrade_no_path"}, {"v1.36.3", "v1.35.4", "upgrade_no_path"}, {"v1.35.4", "v1.40.0", "invalid_field"},
	} {
		if _, err := passesTo(c.from, c.to); !isCode(err, c.code) {
			t.Errorf("%s → %s = %v, want %s", c.from, c.to, err, c.code)
		}
	}
}

func isCode(err error, code string) bool {
	e, ok := apperr.As(err)
	return ok && e.Code.String() == code
}

func node(name, role, version string) store.Node {
	at := time.Now()
	return store.Node{Name: name, Role: role, VMID: 1, KubernetesVersion: version, Phase: "ready", ReadyAt: &at}
}

// The skew policy: a kubelet more than three minors behind the first
// pass's API servers, or newer than the oldest API server now, fails the
// gate naming the node; one within it passes.
func TestVersionSkewGate(t *testing.T) {
	passes := []apitypes.UpgradePass{{From: "v1.35.4", To: "v1.36.3"}}
	cp := node("cp-1", store.RoleControlPlane, "v1.35.4")
	for _, c := range []struct {
		worker string
		fails  bool
	}{{"v1.35.4", false}, {"v1.33.0", false}, {"v1.32.9", true}, {"v1.36.3", true}} {
		err := versionSkew(facts{nodes: []store.Node{cp, node("w-1", store.RoleWorker, c.worker)}, passes: passes})
		if (err != nil) != c.fails || (err != nil && !strings.Contains(err.Error(), "w-1")) {
			t.Errorf("a worker at %s: %v, want failing %v naming it", c.worker, err, c.fails)
		}
	}
}

// An API the chain's releases remove, requested in the last day, fails
// the gate naming it, its removal and its node; one removed later, or
// never, does not, nor one last reported more than a day ago; the
// override marks the failed gate overridden and lets the upgrade begin.
func TestDeprecatedAPIsGate(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	passes := []apitypes.UpgradePass{{From: "v1.35.4", To: "v1.36.3"}}
	cp := node("cp-1", store.RoleControlPlane, "v1.35.4")
	cp.DeprecatedAPIs = []store.DeprecatedAPI{{Group: "x.k8s.io", Version: "v1beta1", Resource: "things", RemovedRelease: "1.37", LastSeen: now},
		{Group: "y.k8s.io", Version: "v1beta1", Resource: "others", RemovedRelease: "", LastSeen: now},
		{Group: "old.k8s.io", Version: "v1beta1", Resource: "gone", RemovedRelease: "1.36", LastSeen: now.Add(-store.DeprecatedAPIsWithin)}}
	f := facts{cluster: store.Cluster{ControlPlaneCount: 1}, nodes: []store.Node{cp}, passes: passes, now: now}
	if err := noRemovedAPIs(f); err != nil {
		t.Errorf("APIs removed after the chain, or last requested a day ago: %v", err)
	}
	f.nodes[0].DeprecatedAPIs = append(f.nodes[0].DeprecatedAPIs, store.DeprecatedAPI{Group: "z.k8s.io", Version: "v1beta2", Resource: "flows",
		Subresource: "status", RemovedRelease: "1.36", LastSeen: now.Add(-time.Hour)})
	want := "requested in the last day: flows/status z.k8s.io/v1beta2 (removed in 1.36, served by cp-1, last reported 2026-12-03T09:00:00Z)"
	if err := noRemovedAPIs(f); err == nil || err.Error() != want {
		t.Errorf("an API v1.36 removes: %v, want %q", err, want)
	}
	if !isCode(refusal(judged(f)), "upgrade_deprecated_apis") {
		t.Error("not refused without the override")
	}
	f.override = true
	if err := refusal(judged(f)); err != nil {
		t.Errorf("refused with the override: %v", err)
	}
}
