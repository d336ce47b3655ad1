package progress

import (
	"slices"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
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
			if to != Failed && rank(Phase(f)) > rank(to) {
				t.Errorf("%s may be entered from the later %s", to, f)
			}
		}
	}
}

func TestClusterState(t *testing.T) {
	for _, c := range []struct {
		phases []Phase
		want   State
	}{
		{nil, StatePending},
		{[]Phase{Pending, Pending, Pending}, StatePending},
		{[]Phase{BundleFetched, Pending, Pending}, StateBootstrapping},
		{[]Phase{Ready, Ready, APIServerReady}, StateBootstrapping},
		{[]Phase{Ready}, StateReady},
		{[]Phase{Ready, Ready, Ready}, StateReady},
		{[]Phase{Ready, Failed, Ready}, StateFailed},
		{[]Phase{Pending, Failed}, StateFailed},
	} {
		if got := ClusterState(c.phases); got != c.want {
			t.Errorf("ClusterState(%v) = %s, want %s", c.phases, got, c.want)
		}
	}
	if b := BootstrapOf(nil); b.State != StatePending || b.Nodes == nil {
		t.Errorf("BootstrapOf(nil) = %+v: want pending and an empty list, never null", b)
	}
}

func ptr(s string) *string { return &s }

// Validation says everything at once, by exact text.
func TestReportValidate(t *testing.T) {
	reportable := "phase: must be one of prerequisites_installed, etcd_started, kubelet_started, apiserver_ready, addons_installed, ready, failed"
	for _, c := range []struct {
		name string
		r    Report
		err  string
	}{
		{"no phase", Report{}, "phase: is required"},
		{"unknown", Report{Phase: ptr("booting")}, reportable},
		{"empty", Report{Phase: ptr("")}, reportable},
		{"case", Report{Phase: ptr("READY")}, reportable},
		{"k8sapi's", Report{Phase: ptr("bundle_fetched")}, "phase: bundle_fetched is recorded by k8sapi, not reported; must be one of prerequisites_installed, etcd_started, kubelet_started, apiserver_ready, addons_installed, ready, failed"},
		{"pending", Report{Phase: ptr("pending")}, "phase: pending is recorded by k8sapi, not reported; must be one of prerequisites_installed, etcd_started, kubelet_started, apiserver_ready, addons_installed, ready, failed"},
		{"oversize", Report{Phase: ptr("failed"), Message: ptr(strings.Repeat("x", MaxMessageBytes+1))}, "message: must be at most 4096 bytes"},
		{"multibyte oversize", Report{Phase: ptr("failed"), Message: ptr(strings.Repeat("é", MaxMessageBytes/2+1))}, "message: must be at most 4096 bytes"},
		{"NUL", Report{Phase: ptr("failed"), Message: ptr("a\x00b")}, "message: must not contain NUL characters"},
		{"everything", Report{Message: ptr(strings.Repeat("\x00", MaxMessageBytes+1))}, "phase: is required; message: must be at most 4096 bytes; message: must not contain NUL characters"},
	} {
		_, _, err := c.r.Validate()
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.InvalidRequest || e.Message != c.err {
			t.Errorf("%s: %v, want invalid_request %q", c.name, err, c.err)
		}
	}
	p, msg, err := Report{Phase: ptr("failed"), Message: ptr(strings.Repeat("x", MaxMessageBytes))}.Validate()
	if err != nil || p != Failed || len(msg) != MaxMessageBytes {
		t.Errorf("a message of exactly %d bytes: %v", MaxMessageBytes, err)
	}
	if p, msg, err := (Report{Phase: ptr("etcd_started")}).Validate(); err != nil || p != EtcdStarted || msg != "" {
		t.Errorf("no message: %s %q %v", p, msg, err)
	}
}

// Why a report that did not move the node is refused, or is not.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		current, to Phase
		code        string
	}{
		{Failed, Failed, ""}, // the first failure's message stays
		{Failed, Ready, "bootstrap_failed"},
		{Failed, PrerequisitesInstalled, "bootstrap_failed"},
		{Ready, EtcdStarted, "phase_regression"},
		{KubeletStarted, PrerequisitesInstalled, "phase_regression"},
		{EtcdStarted, KubeletStarted, "phase_regression"}, // a racing report moved it meanwhile
	} {
		err := refusal(c.current, c.to)
		e, _ := apperr.As(err)
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s → %s: %v, want accepted", c.current, c.to, err)
		case c.code != "" && (e == nil || e.Kind() != apperr.KindConflict || e.Code.String() != c.code):
			t.Errorf("%s → %s: %v, want 409 %s", c.current, c.to, err, c.code)
		}
	}
}
