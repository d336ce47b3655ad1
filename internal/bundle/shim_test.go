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

// runShim renders the shim for a local run (an http base URL, so it may
// talk to the fake services over http) and runs it against vm with
// EXK8S_ROOT and EXK8S_SKIP_HOST_SETUP, as the e2e proof does.
func runShim(t *testing.T, r *Renderer, vm *fakeVM, root string) ([]byte, error) {
	t.Helper()
	return runShimRenderedFor(t, r, vm, root, "http://k8sapi.invalid")
}

// runShimRenderedFor is runShim with the shim rendered for base.
func runShimRenderedFor(t *testing.T, r *Renderer, vm *fakeVM, root, base string) ([]byte, error) {
	t.Helper()
	return runShimOf(t, r, vm, root, UserdataInput{BootstrapBaseURL: base})
}

// runShimOf is runShim with the shim rendered from u.
func runShimOf(t *testing.T, r *Renderer, vm *fakeVM, root string, u UserdataInput) ([]byte, error) {
	t.Helper()
	ud, err := r.Userdata(u)
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

// A shim rendered for an https k8sapi (every run but a local one) talks to
// k8sapi over https only: an http base URL, even set by
// EXK8S_BOOTSTRAP_BASE_URL, is refused by curl before a byte is sent, so
// nothing is fetched or written and no report leaves.
func TestUserdataShimRefusesHTTPWhenRenderedForHTTPS(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	vm := newFakeVM(t, []byte(`{"files": {}}`))
	root := filepath.Join(t.TempDir(), "root")
	out, err := runShimRenderedFor(t, newTestRenderer(t), vm, root, "https://k8sapi.invalid")
	if err == nil {
		t.Fatalf("the shim fetched over http:\n%s", out)
	}
	if !strings.Contains(string(out), "FATAL: the k8sapi base URL must be https") || vm.bundleFetches() != 0 || len(vm.received()) != 0 {
		t.Errorf("want the shim to refuse http, no fetch, no report; got %d fetches, reports %v:\n%s",
			vm.bundleFetches(), vm.received(), out)
	}
}

// The shim writes only under its allow-list of directories: a bundle that
// names any other path is refused whole, before a single file is written.
func TestUserdataShimRefusesPathsOutsideItsDirectories(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	for _, path := range []string{"/root/.ssh/authorized_keys", "/etc/sudoers.d/exk8s", "/etc/exk8s", "/etc/exk8sx/a",
		"/usr/local/bin/../../../etc/passwd", "/etc/exk8s//a", "/etc/exk8s/./a", "relative/file"} {
		body, err := json.Marshal(map[string]any{"files": map[string]string{"/etc/exk8s/config/cluster.env": "A=1\n", path: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		vm := newFakeVM(t, body)
		root := filepath.Join(t.TempDir(), "root")
		out, err := runShim(t, newTestRenderer(t), vm, root)
		if err == nil || !strings.Contains(string(out), "refusing a path outside the allowed directories in bundle") {
			t.Errorf("%s: the shim did not refuse it: %v\n%s", path, err, out)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/exk8s/config/cluster.env")); err == nil {
			t.Errorf("%s: the shim wrote the bundle's other files first", path)
		}
	}
}
