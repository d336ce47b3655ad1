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
	want := []Phase{Pending, BundleFetched, PrerequisitesInstalled, CertificatesSigned, EtcdStarted, KubeletStarted,
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
		if (s.by == byK8sapi) != (s.phase == Pending || s.phase == BundleFetched || s.phase == CertificatesSigned) {
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
		{EtcdStarted, "pending bundle_fetched prerequisites_installed certificates_signed etcd_started"},
		{Ready, "pending bundle_fetched prerequisites_installed certificates_signed etcd_started kubelet_started apiserver_ready addons_installed ready"},
		// failed from anywhere but failed: a second failed is not a move.
		{Failed, "pending bundle_fetched prerequisites_installed certificates_signed etcd_started kubelet_started apiserver_ready addons_installed ready"},
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

// Next walks the table's order for the node's role: the initial node
// passes addons_installed, the others go from apiserver_ready to ready; a
// worker goes from its fetch to its signed certificates and its kubelet;
// nothing follows ready or failed.
func TestNext(t *testing.T) {
	for _, c := range []struct {
		from    Phase
		role    Role
		initial bool
		want    string
	}{
		{Pending, ControlPlane, false, "bundle_fetched"},
		{BundleFetched, ControlPlane, false, "prerequisites_installed"},
		{EtcdStarted, ControlPlane, false, "kubelet_started"},
		{APIServerReady, ControlPlane, true, "addons_installed"},
		{APIServerReady, ControlPlane, false, "ready"},
		{AddonsInstalled, ControlPlane, true, "ready"},
		{Ready, ControlPlane, true, ""},
		{Failed, ControlPlane, false, ""},
		{Pending, Worker, false, "bundle_fetched"},
		{BundleFetched, Worker, false, "certificates_signed"},
		{CertificatesSigned, Worker, false, "kubelet_started"},
		{KubeletStarted, Worker, false, "ready"},
		{Ready, Worker, false, ""},
	} {
		next, ok := Next(c.from, c.role, c.initial)
		if string(next) != c.want || ok != (c.want != "") {
			t.Errorf("Next(%s, role %d, initial %v) = %q, %v; want %q", c.from, c.role, c.initial, next, ok, c.want)
		}
	}
}

// Each role reports its own phases: a worker never etcd's or the API
// server's, a control-plane node never a worker's; both report their
// kubelet, ready and failed.
func TestReportableBy(t *testing.T) {
	for role, want := range map[Role]string{
		ControlPlane: "prerequisites_installed etcd_started kubelet_started apiserver_ready addons_installed ready failed",
		Worker:       "kubelet_started ready failed",
	} {
		var got []string
		for _, p := range ReportableBy(role) {
			got = append(got, string(p))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("ReportableBy(%d) = %v, want %s", role, got, want)
		}
	}
	if PassedBy(EtcdStarted, Worker) || PassedBy(CertificatesSigned, ControlPlane) || !PassedBy(Ready, Worker) {
		t.Error("PassedBy does not follow the table")
	}
}
