package bundle

import (
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/progress"
)

// libraryText is the shell library's text within a rendered script.
func libraryText(t *testing.T, name, script string) string {
	t.Helper()
	const begin, end = "# --- the exk8s shell library", "# --- end of the exk8s shell library ---\n"
	i, j := strings.Index(script, begin), strings.Index(script, end)
	if i < 0 || j < i || strings.Count(script, begin) != 1 {
		t.Fatalf("%s does not carry the shell library once", name)
	}
	return script[i : j+len(end)]
}

// The shim carries exactly the library the bundle's scripts source.
func TestShimCarriesTheShellLibrary(t *testing.T) {
	r := newTestRenderer(t)
	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in"})
	if err != nil {
		t.Fatal(err)
	}
	_, bundles := realBundles(t)
	lib := mustFile(t, bundles[101], binDir+"/exk8s-progress.sh")
	if libraryText(t, "the shim", ud) != libraryText(t, "exk8s-progress.sh", lib) {
		t.Error("the shim's shell library is not exk8s-progress.sh's")
	}
}

// How long each kind of call may take, as curl is told.
func TestVMCallLimits(t *testing.T) {
	want := map[string]string{
		"report":          "--connect-timeout 5 --max-time 10 --retry 3 --retry-delay 2 --retry-max-time 20 --retry-connrefused",
		"renew":           "--connect-timeout 5 --max-time 60 --retry 6 --retry-delay 10 --retry-max-time 300 --retry-connrefused",
		"boot":            "--connect-timeout 5 --max-time 60",
		"boot_identity":   "--connect-timeout 5 --max-time 60",
		"download":        "--connect-timeout 10 --retry 5 --retry-delay 3 --retry-connrefused",
		"snapshot":        "--connect-timeout 5 --max-time 30 --retry 3 --retry-delay 2 --retry-max-time 30 --retry-connrefused",
		"upload":          "--connect-timeout 10 --retry 3 --retry-delay 5 --retry-connrefused",
		"etcd_crl":        "--connect-timeout 5 --max-time 10 --retry 2 --retry-delay 2 --retry-max-time 20 --retry-connrefused",
		"etcd_membership": "--connect-timeout 5 --max-time 10 --retry 2 --retry-delay 2 --retry-max-time 20 --retry-connrefused",
		"addons":          "--connect-timeout 5 --max-time 30 --retry 4 --retry-delay 3 --retry-max-time 60 --retry-connrefused",
	}
	if len(vmCalls) != len(want) {
		t.Errorf("%d kinds of call, want %d", len(vmCalls), len(want))
	}
	for _, c := range vmCalls {
		if got := c.curlArgs(); got != want[c.Kind] || c.Attempts < 1 || (c.Attempts > 1) != (c.Interval > 0) {
			t.Errorf("%s: curl %q, %d attempts %d s apart; want curl %q", c.Kind, got, c.Attempts, c.Interval, want[c.Kind])
		}
	}
}

// A failure's tail fits a report's message even if k8sapi replaced every
// byte with U+FFFD (three bytes), with room for the script's name, its
// step, the failed command (cut at 200 bytes) and the log's path.
func TestFailureTailFitsAMessage(t *testing.T) {
	if 3*failureTailBytes+200+256 > progress.MaxMessageBytes {
		t.Errorf("a tail of %d bytes may not fit k8sapi's %d", failureTailBytes, progress.MaxMessageBytes)
	}
}

// A script reports only a phase a VM may report: another fails the
// rendering.
func TestPhaseFunc(t *testing.T) {
	for _, p := range clusterfacts.Reportable() {
		if got, err := reportedPhase(string(p)); err != nil || got != string(p) {
			t.Errorf("phase %s: %q, %v", p, got, err)
		}
	}
	for _, p := range []string{"pending", "bundle_fetched", "booting", ""} {
		if _, err := reportedPhase(p); err == nil {
			t.Errorf("phase %q rendered", p)
		}
	}
}

func TestRetryOfIsTheTablesRule(t *testing.T) {
	r, ok := RetryOf("report")
	if !ok || r.Retries != 3 || r.RetryDelay != 2*time.Second || r.RetryMax != 20*time.Second || r.Attempts != 1 {
		t.Errorf("report: %+v %v", r, ok)
	}
	if b, _ := RetryOf("boot"); b.Retries != 0 || b.Attempts != 120 || b.Interval != 5*time.Second {
		t.Errorf("boot: %+v", b)
	}
	if _, ok := RetryOf("no such kind"); ok {
		t.Error("a kind that is not in the table has a rule")
	}
}
