package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEtcdctl puts an etcdctl on PATH that saves content as the snapshot
// (or fails, content "") and records its arguments in args.
func fakeEtcdctl(t *testing.T, content string) (path, args string) {
	t.Helper()
	dir := t.TempDir()
	args = filepath.Join(dir, "args")
	script := "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >" + args + "\n"
	if content == "" {
		script += "echo 'Error: context deadline exceeded' >&2\nexit 1\n"
	} else {
		script += "printf '%s' '" + content + "' >\"${@: -1}\"\necho 'Snapshot saved'\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "etcdctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH"), args
}

func runSnapshot(t *testing.T, vm *fakeVM, root, path string) (string, error) {
	t.Helper()
	return runNodeScript(t, vm, root, SnapshotScript, path)
}

// runNodeScript runs an installed node's script against vm with PATH path
// (its fakes first).
func runNodeScript(t *testing.T, vm *fakeVM, root, script, path string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, filepath.FromSlash(script)))
	cmd.Env = append(append(os.Environ(), vm.env(root)...), "PATH="+path)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Nothing to take: the script asks, k8sapi answers 204, it exits 0 and
// touches nothing. Chosen: etcdctl saves the local member's snapshot as the
// node's etcd client, the file goes to the presigned URL as it is, the
// report carries its size and SHA-256, the file is gone after, and no
// bootstrap phase is reported.
func TestSnapshotScriptTakesUploadsAndReports(t *testing.T) {
	_, vm, root := renewalNode(t)
	requireTools(t, "sha256sum", "stat")
	path, args := fakeEtcdctl(t, "etcd snapshot of cluster 42")
	if out, err := runSnapshot(t, vm, root, path); err != nil || !strings.Contains(out, "no snapshot for this node to take") {
		t.Fatalf("nothing to take: %v\n%s", err, out)
	}
	if _, err := os.Stat(args); err == nil {
		t.Fatal("etcdctl ran with nothing to take")
	}

	vm.snapshot = []byte(`{"id":7,"cluster_id":42,"object_key":"etcd-snapshots/42/7.db","upload_url":"` + vm.srv.URL +
		`/upload/k8sapi-local-etcd-snapshots/etcd-snapshots/42/7.db?X-Amz-Expires=900&X-Amz-Signature=abc","expires_at":"2026-11-24T12:15:00Z"}`)
	out, err := runSnapshot(t, vm, root, path)
	if err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out)
	}
	got := vm.uploads["/upload/k8sapi-local-etcd-snapshots/etcd-snapshots/42/7.db"]
	if string(got) != "etcd snapshot of cluster 42" {
		t.Fatalf("uploaded %q\n%s", got, out)
	}
	sum := sha256.Sum256(got)
	if len(vm.snapshotReports) != 1 || vm.snapshotReports[0]["id"] != float64(7) ||
		vm.snapshotReports[0]["size_bytes"] != float64(len(got)) || vm.snapshotReports[0]["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("reports %v", vm.snapshotReports)
	}
	used, _ := os.ReadFile(args)
	for _, want := range []string{"--endpoints=https://127.0.0.1:2379", "--cacert=" + root + "/etc/exk8s/pki/etcd-ca.pem",
		"--cert=" + root + "/etc/exk8s/pki/apiserver-etcd-client.pem", "--key=" + root + "/etc/exk8s/pki/apiserver-etcd-client-key.pem", "snapshot\nsave"} {
		if !strings.Contains(string(used), want) {
			t.Errorf("etcdctl ran without %q:\n%s", want, used)
		}
	}
	if strings.Contains(out, "X-Amz-Signature") {
		t.Errorf("the presigned URL is in the script's output:\n%s", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "var/lib/exk8s/etcd-snapshots")); len(entries) != 0 {
		t.Errorf("the snapshot was left behind: %v", entries)
	}
	if r := vm.received(); len(r) != 0 {
		t.Errorf("a snapshot reported bootstrap phases: %+v", r)
	}
}

// etcdctl failing: the script fails, reports the snapshot failed with its
// step, uploads nothing and leaves the node's phase alone.
func TestSnapshotScriptReportsItsFailure(t *testing.T) {
	_, vm, root := renewalNode(t)
	path, _ := fakeEtcdctl(t, "")
	vm.snapshot = []byte(`{"id":8,"cluster_id":42,"object_key":"etcd-snapshots/42/8.db","upload_url":"` + vm.srv.URL +
		`/upload/b/etcd-snapshots/42/8.db?X-Amz-Signature=abc","expires_at":"2026-11-24T12:15:00Z"}`)
	out, err := runSnapshot(t, vm, root, path)
	if err == nil {
		t.Fatalf("a failed etcdctl succeeded:\n%s", out)
	}
	if len(vm.snapshotReports) != 1 || vm.snapshotReports[0]["id"] != float64(8) ||
		!strings.Contains(vm.snapshotReports[0]["error"].(string), `step "saving a snapshot of the local etcd member" failed`) {
		t.Fatalf("reports %v\n%s", vm.snapshotReports, out)
	}
	if len(vm.uploads) != 0 || len(vm.received()) != 0 {
		t.Errorf("uploads %v, phase reports %v", vm.uploads, vm.received())
	}
}
