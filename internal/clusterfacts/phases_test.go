package clusterfacts

import (
	"slices"
	"strings"
	"testing"
)

// The table's rules, not only its rows: phases are unique and known, each
// means something, pending comes first and failed last, and only the two
// phases k8sapi records are closed to VMs.
func TestPhaseTableRules(t *testing.T) {
	all := Phases()
	want := []Phase{Pending, BundleFetched, PrerequisitesInstalled, EtcdStarted, KubeletStarted,
		APIServerReady, AddonsInstalled, Ready, Failed}
	if !slices.Equal(all, want) {
		t.Fatalf("phases %v, want %v", all, want)
	}
	seen := map[Phase]bool{}
	for _, s := range phaseTable {
		if seen[s.phase] || s.means == "" || Meaning(s.phase) != s.means {
			t.Errorf("%s: duplicate or meaningless", s.phase)
		}
		seen[s.phase] = true
		if (s.by == byK8sapi) != (s.phase == Pending || s.phase == BundleFetched) {
			t.Errorf("%s: recorded by the wrong side", s.phase)
		}
	}
	if Meaning("booting") != "" {
		t.Error("an unknown phase means something")
	}
}

func TestEnterableFrom(t *testing.T) {
	for _, c := range []struct {
		to   Phase
		from string
	}{
		{BundleFetched, "pending bundle_fetched"},
		{EtcdStarted, "pending bundle_fetched prerequisites_installed etcd_started"},
		{Ready, "pending bundle_fetched prerequisites_installed etcd_started kubelet_started apiserver_ready addons_installed ready"},
		// failed from anywhere but failed: a second failed is not a move.
		{Failed, "pending bundle_fetched prerequisites_installed etcd_started kubelet_started apiserver_ready addons_installed ready"},
	} {
		if got := strings.Join(EnterableFrom(c.to), " "); got != c.from {
			t.Errorf("EnterableFrom(%s) = %s, want %s", c.to, got, c.from)
		}
	}
	// No phase but failed is ever entered from failed, and none from a
	// later phase: that is what 409 means.
	for _, to := range Phases() {
		from := EnterableFrom(to)
		if slices.Contains(from, string(Failed)) {
			t.Errorf("%s may be entered from failed", to)
		}
		for _, f := range from {
			if to != Failed && Phase(f).After(to) {
				t.Errorf("%s may be entered from the later %s", to, f)
			}
		}
	}
}

// Next walks the table's order: the initial node passes addons_installed,
// the others go from apiserver_ready to ready; nothing follows ready or
// failed.
func TestNext(t *testing.T) {
	for _, c := range []struct {
		from    Phase
		initial bool
		want    string
	}{
		{Pending, false, "bundle_fetched"},
		{EtcdStarted, false, "kubelet_started"},
		{APIServerReady, true, "addons_installed"},
		{APIServerReady, false, "ready"},
		{AddonsInstalled, true, "ready"},
		{Ready, true, ""},
		{Failed, false, ""},
	} {
		next, ok := Next(c.from, c.initial)
		if string(next) != c.want || ok != (c.want != "") {
			t.Errorf("Next(%s, initial %v) = %q, %v; want %q", c.from, c.initial, next, ok, c.want)
		}
	}
}
