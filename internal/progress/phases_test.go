package progress

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterfacts"
)

func TestClusterState(t *testing.T) {
	for _, c := range []struct {
		phases []clusterfacts.Phase
		want   State
	}{
		{nil, StatePending},
		{[]clusterfacts.Phase{clusterfacts.Pending, clusterfacts.Pending, clusterfacts.Pending}, StatePending},
		{[]clusterfacts.Phase{clusterfacts.BundleFetched, clusterfacts.Pending, clusterfacts.Pending}, StateBootstrapping},
		{[]clusterfacts.Phase{clusterfacts.Ready, clusterfacts.Ready, clusterfacts.APIServerReady}, StateBootstrapping},
		{[]clusterfacts.Phase{clusterfacts.Ready}, StateReady},
		{[]clusterfacts.Phase{clusterfacts.Ready, clusterfacts.Ready, clusterfacts.Ready}, StateReady},
		{[]clusterfacts.Phase{clusterfacts.Ready, clusterfacts.Failed, clusterfacts.Ready}, StateFailed},
		{[]clusterfacts.Phase{clusterfacts.Pending, clusterfacts.Failed}, StateFailed},
	} {
		if got := ClusterState(c.phases); got != c.want {
			t.Errorf("ClusterState(%v) = %s, want %s", c.phases, got, c.want)
		}
	}
	if b := BootstrapOf(nil); b.State != string(StatePending) || b.Nodes == nil {
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
		_, _, err := c.r.Validate(clusterfacts.ControlPlane)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.InvalidRequest || e.Message != c.err {
			t.Errorf("%s: %v, want invalid_request %q", c.name, err, c.err)
		}
	}
	p, msg, err := Report{Phase: ptr("failed"), Message: ptr(strings.Repeat("x", MaxMessageBytes))}.Validate(clusterfacts.ControlPlane)
	if err != nil || p != clusterfacts.Failed || len(msg) != MaxMessageBytes {
		t.Errorf("a message of exactly %d bytes: %v", MaxMessageBytes, err)
	}
	if p, msg, err := (Report{Phase: ptr("etcd_started")}).Validate(clusterfacts.ControlPlane); err != nil || p != clusterfacts.EtcdStarted || msg != "" {
		t.Errorf("no message: %s %q %v", p, msg, err)
	}
	// A worker reports a worker's phases alone.
	for phase, want := range map[string]string{
		"etcd_started":        "phase: etcd_started is no phase a worker passes; must be one of kubelet_started, ready, failed",
		"certificates_signed": "phase: certificates_signed is recorded by k8sapi, not reported; must be one of kubelet_started, ready, failed",
		"kubelet_started":     "",
	} {
		_, _, err := Report{Phase: ptr(phase)}.Validate(clusterfacts.Worker)
		if e, ok := apperr.As(err); (want == "" && err != nil) || (want != "" && (!ok || e.Message != want)) {
			t.Errorf("a worker's %s: %v, want %q", phase, err, want)
		}
	}
	if _, _, err := (Report{Phase: ptr("kubelet_started")}).Validate(clusterfacts.ControlPlane); err != nil {
		t.Errorf("a control-plane node's kubelet_started: %v", err)
	}
}

// Why a report that did not move the node is refused, or is not.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		current, to clusterfacts.Phase
		code        string
	}{
		{clusterfacts.Failed, clusterfacts.Failed, ""}, // the first failure's message stays
		{clusterfacts.Failed, clusterfacts.Ready, "bootstrap_failed"},
		{clusterfacts.Failed, clusterfacts.PrerequisitesInstalled, "bootstrap_failed"},
		{clusterfacts.Ready, clusterfacts.EtcdStarted, "phase_regression"},
		{clusterfacts.KubeletStarted, clusterfacts.PrerequisitesInstalled, "phase_regression"},
		{clusterfacts.EtcdStarted, clusterfacts.KubeletStarted, "phase_regression"}, // a racing report moved it meanwhile
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
