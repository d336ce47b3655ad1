package bundle

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runWithProgress runs body as a bash script that sources the rendered
// exk8s-progress.sh, against vm, with EXK8S_ROOT so logs stay in the test.
func runWithProgress(t *testing.T, vm *fakeVM, body string) (string, error) {
	t.Helper()
	_, bundles := realBundles(t)
	lib, ok := bundles[101].File("/usr/local/bin/exk8s-progress.sh")
	if !ok {
		t.Fatal("no exk8s-progress.sh in the bundle")
	}
	dir := t.TempDir()
	libPath := filepath.Join(dir, "exk8s-progress.sh")
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(libPath, []byte(lib.Content), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "#!/usr/bin/env bash\nset -euo pipefail\n. " + libPath + "\n" + body
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), vm.env(filepath.Join(dir, "root"))...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A script's phases reach k8sapi; a report k8sapi refuses or cannot take
// changes nothing about how the script goes on.
func TestProgressReportsPhasesAndNeverFails(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	// 503 is retried (twice here); 409 is an answer, not retried.
	vm := newFakeVM(t, nil, 503, 503, 204, 409)
	out, err := runWithProgress(t, vm, `progress_begin demo
step "first"
progress_report etcd_started
progress_report apiserver_ready "local /readyz answered"
echo "the script went on"
`)
	if err != nil || !strings.Contains(out, "the script went on") {
		t.Fatalf("script: %v\n%s", err, out)
	}
	got := vm.received()
	want := []vmReport{{"etcd_started", ""}, {"etcd_started", ""}, {"etcd_started", ""}, {"apiserver_ready", "local /readyz answered"}}
	if len(got) != len(want) {
		t.Fatalf("reports %+v, want %+v\n%s", got, want, out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if !strings.Contains(out, "could not report apiserver_ready; the bootstrap goes on") {
		t.Errorf("a refused report is not logged:\n%s", out)
	}
}

// A failing script reports failed once, naming its step and the command,
// with the tail of its own log; it still exits with the failure's status.
func TestProgressReportsAFailedStep(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	vm := newFakeVM(t, nil)
	out, err := runWithProgress(t, vm, `progress_begin demo
step "unpacking things"
for i in $(seq 1 40); do echo "line $i of the output"; done
printf 'a bell \a and an escape \033[1m\n'
step "breaking on purpose"
echo "the last words"
false
echo "never here"
`)
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 1 || strings.Contains(out, "never here") {
		t.Fatalf("script: %v\n%s", err, out)
	}
	got := vm.received()
	if len(got) != 1 || got[0].Phase != "failed" {
		t.Fatalf("reports %+v, want one failed\n%s", got, out)
	}
	t.Logf("failed report:\n%s", got[0].Message)
	checkFailureMessage(t, got[0].Message, `demo: step "breaking on purpose" failed (exit 1): false`, "the last words")
	if strings.Contains(got[0].Message, "line 10 of") {
		t.Errorf("more than the tail of the output:\n%s", got[0].Message)
	}
}

// Run by hand, exk8s-progress.sh reports one phase and says whether k8sapi
// took it.
func TestProgressCommand(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	vm := newFakeVM(t, nil, 204, 409)
	for i, wantErr := range []bool{false, true} {
		out, err := runWithProgress(t, vm, `bash "${BASH_SOURCE[0]%/*}/exk8s-progress.sh" ready "by hand"`)
		if (err != nil) != wantErr {
			t.Errorf("run %d: err %v, want error %v\n%s", i, err, wantErr, out)
		}
	}
	if got := vm.received(); len(got) != 2 || got[0] != (vmReport{"ready", "by hand"}) {
		t.Errorf("reports %+v", got)
	}
}

// start_unit enables and starts a unit again after a start of the moment
// failed (a oneshot's 219/CGROUP), and gives up after three failures.
func TestStartUnitTriesAUnitThreeTimes(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	for _, tc := range []struct {
		name  string
		fails int
		ok    bool
	}{{"the second start works", 1, true}, {"three failures fail", 3, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls")
			writeExec(t, filepath.Join(dir, "systemctl"), "#!/usr/bin/env bash\necho \"$*\" >>"+calls+
				"\n(( $(wc -l <"+calls+") > "+strconv.Itoa(tc.fails)+" ))\n")
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := runWithProgress(t, newFakeVM(t, nil), "start_unit exk8s-imds-guard.service\necho started\n")
			raw, _ := os.ReadFile(calls)
			want := min(tc.fails+1, 3)
			if (err == nil) != tc.ok || strings.Count(string(raw), "enable --now exk8s-imds-guard.service\n") != want {
				t.Errorf("err %v, systemctl calls %q, want %d calls and ok=%v\n%s", err, raw, want, tc.ok, out)
			}
		})
	}
}
