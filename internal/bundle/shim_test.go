package bundle

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserdataShimWritesBundle runs the rendered shim against a fake IMDS
// and k8sapi with EXK8S_ROOT and EXK8S_SKIP_HOST_SETUP, and checks it wrote
// every file with its content and mode.
func TestUserdataShimWritesBundle(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	fx := loadFixtures(t)
	c, nodes := testCluster()
	r := newTestRenderer(t)
	b, err := r.Render(fx.input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	// Content a naive shell loop would mangle.
	b.Files = append(b.Files, File{Path: "/etc/exk8s/config/zz-odd", Mode: 0o640, Content: "no trailing newline\n\n$(touch /tmp/pwned) 'q' \"d\" \\ \t"})
	body, err := json.Marshal(b.Response())
	if err != nil {
		t.Fatal(err)
	}

	vm := newFakeVM(t, body)
	root := filepath.Join(t.TempDir(), "root")
	out, err := runShim(t, r, vm, root)
	if err != nil {
		t.Fatalf("shim failed: %v\n%s", err, out)
	}
	if got := vm.received(); len(got) != 0 {
		t.Errorf("a shim that skips host setup and succeeds reported %v", got)
	}
	for _, f := range b.Files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("shim did not write %s: %v", f.Path, err)
			continue
		}
		if string(got) != f.Content {
			t.Errorf("%s: written content differs", f.Path)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != f.Mode {
			t.Errorf("%s: written mode %04o, want %04o", f.Path, st.Mode().Perm(), f.Mode)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/log/exk8s/bootstrap-userdata.log")); err != nil {
		t.Errorf("shim log not under EXK8S_ROOT: %v", err)
	}
	if strings.Contains(string(out), "principal-token") || strings.Contains(string(out), "imds-session") {
		t.Errorf("shim logged a token:\n%s", out)
	}
}

// runShim renders the shim and runs it against vm with EXK8S_ROOT and
// EXK8S_SKIP_HOST_SETUP, as the e2e proof does.
func runShim(t *testing.T, r *Renderer, vm *fakeVM, root string) ([]byte, error) {
	t.Helper()
	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(t.TempDir(), "userdata.sh")
	if err := os.WriteFile(shim, []byte(ud), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", shim)
	cmd.Env = append(append(os.Environ(), vm.env(root)...), "EXK8S_SKIP_HOST_SETUP=1")
	return cmd.CombinedOutput()
}

// TestUserdataShimReportsItsFailure: a shim that fails once it holds the
// VM's credentials reports failed with its step and the tail of its log,
// and still fails itself (the report changes nothing about how it ends).
func TestUserdataShimReportsItsFailure(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	vm := newFakeVM(t, []byte(`{"files": "not an object"}`))
	out, err := runShim(t, newTestRenderer(t), vm, filepath.Join(t.TempDir(), "root"))
	if err == nil {
		t.Fatalf("the shim accepted a bundle that is no map of files:\n%s", out)
	}
	got := vm.received()
	if len(got) != 1 || got[0].Phase != "failed" {
		t.Fatalf("reports %+v, want one failed\n%s", got, out)
	}
	checkFailureMessage(t, got[0].Message, `bootstrap-userdata: step "fetching the bundle of VM 102 from `,
		"FATAL: bundle is not a JSON object of files")
}

// checkFailureMessage: a failed report names its step first, carries the
// tail of the output, fits k8sapi's limit and holds no control characters
// but newlines and tabs.
func checkFailureMessage(t *testing.T, msg, step, tail string) {
	t.Helper()
	if !strings.HasPrefix(msg, step) || !strings.Contains(msg, tail) {
		t.Errorf("message does not start with %q and hold %q:\n%s", step, tail, msg)
	}
	if len(msg) > 4096 {
		t.Errorf("message of %d bytes", len(msg))
	}
	for _, c := range msg {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			t.Errorf("control character %q in the message", c)
		}
	}
	if strings.Contains(msg, "principal-token") || strings.Contains(msg, "imds-session") {
		t.Errorf("a token in the message:\n%s", msg)
	}
}
