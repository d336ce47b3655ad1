package artifacts

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The table's rules: versions unique and oldest first, every upgrade
// target a release of the table at most one minor ahead, and the
// deployment default a release whose components are the default set's
// (one truth for what v1.35.4 runs).
func TestReleasesTable(t *testing.T) {
	versions := SupportedVersions()
	if !slices.IsSortedFunc(versions, compareVersions) || len(slices.Compact(slices.Clone(versions))) != len(versions) {
		t.Fatalf("versions not unique and oldest first: %v", versions)
	}
	for _, r := range Releases() {
		for _, to := range r.UpgradesTo {
			if _, ok := ReleaseOf(to); !ok || compareVersions(to, r.Kubernetes) <= 0 || minor(to)-minor(r.Kubernetes) > 1 {
				t.Errorf("%s upgrades to %s: not a later release of the table within one minor", r.Kubernetes, to)
			}
		}
	}
	def, ok := ReleaseOf(DefaultKubernetesVersion)
	d := Default()
	if !ok || def.Conformance == "" || def.Etcd != d.EtcdVersion || def.CoreDNS != d.CoreDNSVersion || def.Pause != d.PauseVersion {
		t.Errorf("the default %s: release %+v (found %v), default set etcd %s CoreDNS %s pause %s",
			DefaultKubernetesVersion, def, ok, d.EtcdVersion, d.CoreDNSVersion, d.PauseVersion)
	}
}

// A set for another release takes that release's components; for the one
// it was configured with it stays the operator's.
func TestSetForARelease(t *testing.T) {
	configured := Default()
	configured.CoreDNSVersion = "v1.13.9" // an operator's mirror holds another patch
	next, _ := ReleaseOf("v1.36.3")
	if got := configured.For(next, DefaultKubernetesVersion); got.CoreDNSVersion != "v1.14.2" || got.PauseVersion != "3.10.2" || got.KubeDownloadBase != configured.KubeDownloadBase {
		t.Errorf("for v1.36.3: %+v", got)
	}
	own, _ := ReleaseOf(DefaultKubernetesVersion)
	if got := configured.For(own, DefaultKubernetesVersion); got.CoreDNSVersion != "v1.13.9" {
		t.Errorf("for the configured release the operator's CoreDNS %s was replaced by %s", configured.CoreDNSVersion, got.CoreDNSVersion)
	}
}

func minor(v string) int {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	n, _ := strconv.Atoi(parts[1])
	return n
}

func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range pa {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return 0
}
