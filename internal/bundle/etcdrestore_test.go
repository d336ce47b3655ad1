package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// restoredCluster is the test cluster founded from an etcd snapshot.
func restoredCluster() (clusterfacts.Cluster, []clusterfacts.Node) {
	c, nodes := testCluster()
	c.Restored = true
	return c, nodes
}

// restoreFiles are the files a restored cluster renders differently: the
// bootstrap script, which runs the restore before etcd first starts, the
// restore script, and the addons script, which removes the old cluster's
// Nodes (etcd.service is the same as any founding node's).
var restoreFiles = []string{"etc/systemd/system/etcd.service", "usr/local/bin/exk8s-bootstrap-control-plane.sh", "usr/local/bin/exk8s-etcd-restore.sh",
	"usr/local/bin/exk8s-install-cluster-addons.sh"}

// TestGoldenRestore: a restored cluster's node restores its member from
// the snapshot before etcd starts, as a member of the cluster etcd.service
// starts (same name, initial cluster and token). Golden files under
// testdata/golden/restore.
func TestGoldenRestore(t *testing.T) {
	c, nodes := restoredCluster()
	b, err := newTestRenderer(t).Render(issueClusterPKI(t, c, nodes, time.Now).input(c, nodes, 102))
	if err != nil {
		t.Fatal(err)
	}
	got := bundleFiles(t, b, restoreFiles)
	assertGoldenDir(t, filepath.Join(goldenDir, "restore", "cp-2.cluster-42.internal"), got)
	unit := string(got["etc/systemd/system/etcd.service"])
	script := string(got["usr/local/bin/exk8s-etcd-restore.sh"])
	if addons := string(got["usr/local/bin/exk8s-install-cluster-addons.sh"]); !strings.Contains(addons, "NODE_DOMAIN='cp-2.cluster-42.internal'\n") {
		t.Error("the restored cluster's addons script does not keep its own Nodes by their domain")
	}
	for _, flag := range []string{"--initial-cluster-token=exk8s-7-2a ", "--initial-cluster=" + b.Metadata.EtcdInitialCluster + " ", "--initial-cluster-state=new "} {
		if !strings.Contains(unit, flag) {
			t.Errorf("etcd.service lacks %s", flag)
		}
	}
	for _, v := range []string{"CLUSTER_TOKEN='exk8s-7-2a'\n", "INITIAL_CLUSTER='" + b.Metadata.EtcdInitialCluster + "'\n",
		"SELF_NAME='cp-2.cluster-42.internal'\n", "SELF_PEER_URL='https://10.0.0.12:2380'\n"} {
		if !strings.Contains(script, v) {
			t.Errorf("the restore script does not restore with etcd.service's %q", v)
		}
	}
}

// A cluster founded empty renders no restore script, and a node made by a
// replacement in a restored cluster joins the running etcd instead.
func TestOnlyARestoredClustersFoundingNodesRestore(t *testing.T) {
	c, nodes := testCluster()
	rc, rnodes := replacementCluster()
	rc.Restored = true
	for _, tc := range []struct {
		name  string
		c     clusterfacts.Cluster
		nodes []clusterfacts.Node
		vm    int64
	}{{"founded empty", c, nodes, 102}, {"a replacement's node", rc, rnodes, 104}} {
		b, err := newTestRenderer(t).Render(issueClusterPKI(t, tc.c, tc.nodes, time.Now).input(tc.c, tc.nodes, tc.vm))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b.File(EtcdRestoreScript); ok {
			t.Errorf("%s: the bundle has %s", tc.name, EtcdRestoreScript)
		}
		boot, _ := b.File(binDir + "/exk8s-bootstrap-control-plane.sh")
		if strings.Contains(boot.Content, "exk8s-etcd-restore") {
			t.Errorf("%s: the bootstrap script restores", tc.name)
		}
		if addons, _ := b.File(binDir + "/exk8s-install-cluster-addons.sh"); strings.Contains(addons.Content, "old_cluster_nodes") {
			t.Errorf("%s: the addons script removes Nodes", tc.name)
		}
	}
}

// restoreNode is a restored cluster's node 102 installed under a root by
// its shim, with a fake etcdutl on PATH that records its arguments and
// writes a member into its --data-dir.
func restoreNode(t *testing.T) (vm *fakeVM, root, path, args string) {
	t.Helper()
	requireTools(t, "sha256sum", "stat", "mktemp")
	c, nodes := restoredCluster()
	_, vm, root = installedNode(t, c, nodes)
	dir := t.TempDir()
	args = filepath.Join(dir, "args")
	fake := "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >" + args + "\n" +
		"while (($#)); do [[ $1 == --data-dir ]] && d=$2; shift; done\nmkdir -p \"$d/member/snap\" && echo restored >\"$d/member/snap/db\"\n"
	if err := os.WriteFile(filepath.Join(dir, "etcdutl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	return vm, root, dir + string(os.PathListSeparator) + os.Getenv("PATH"), args
}

func runRestore(t *testing.T, vm *fakeVM, root, path string) (string, error) {
	t.Helper()
	return runNodeScript(t, vm, root, EtcdRestoreScript, path)
}

// serveSnapshot makes vm answer the restore route with a URL of content
// on its fake object store, recorded as having sha256.
func serveSnapshot(vm *fakeVM, content, sha256hex string) {
	vm.restore = []byte(`{"url":"` + vm.srv.URL + `/download/etcd-snapshots/41/7.db?X-Amz-Signature=abc","expires_at":"2026-11-24T12:15:00Z","size_bytes":` +
		strconv.Itoa(len(content)) + `,"sha256":"` + sha256hex + `"}`)
	vm.downloads = map[string][]byte{"/download/etcd-snapshots/41/7.db": []byte(content)}
}

// The script downloads the snapshot the route names, checks it, restores
// it as this cluster's member (etcd.service's name, initial cluster and
// token, a scratch data dir) and moves the member into /var/lib/etcd,
// leaving no scratch behind and no URL in its output. Run again, it finds
// the member and asks nothing.
func TestRestoreScriptRestoresOnce(t *testing.T) {
	vm, root, path, args := restoreNode(t)
	content := "etcd snapshot of cluster 41"
	sum := sha256.Sum256([]byte(content))
	serveSnapshot(vm, content, hex.EncodeToString(sum[:]))
	out, err := runRestore(t, vm, root, path)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	dataDir := filepath.Join(root, "var/lib/etcd")
	if db, err := os.ReadFile(filepath.Join(dataDir, "member/snap/db")); err != nil || string(db) != "restored\n" {
		t.Fatalf("no restored member in %s: %v\n%s", dataDir, err, out)
	}
	if fi, err := os.Stat(filepath.Join(dataDir, "member")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the member's mode: %v %v", fi, err)
	}
	used, _ := os.ReadFile(args)
	for _, want := range []string{"snapshot\nrestore\n", "--name\ncp-2.cluster-42.internal\n", "--initial-cluster-token\nexk8s-7-2a\n",
		"--initial-advertise-peer-urls\nhttps://10.0.0.12:2380\n",
		"--initial-cluster\ncp-1.cluster-42.internal=https://10.0.0.11:2380,cp-2.cluster-42.internal=https://10.0.0.12:2380,cp-3.cluster-42.internal=https://10.0.0.13:2380\n",
		"--data-dir\n" + dataDir + ".restore."} {
		if !strings.Contains(string(used), want) {
			t.Errorf("etcdutl ran without %q:\n%s", want, used)
		}
	}
	if strings.Contains(out, "X-Amz-Signature") {
		t.Errorf("the presigned URL is in the script's output:\n%s", out)
	}
	if scratch, _ := filepath.Glob(dataDir + ".restore.*"); len(scratch) != 0 {
		t.Errorf("scratch left behind: %v", scratch)
	}

	asked := vm.restoreAsks
	_ = os.Remove(args)
	if out, err := runRestore(t, vm, root, path); err != nil || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if _, err := os.Stat(args); err == nil || vm.restoreAsks != asked {
		t.Errorf("a rerun restored again (etcdutl ran: %v; asks %d, then %d)", err == nil, asked, vm.restoreAsks)
	}
}

// A data dir holding a member is never touched, not even asked about.
func TestRestoreScriptLeavesAMemberAlone(t *testing.T) {
	vm, root, path, args := restoreNode(t)
	serveSnapshot(vm, "x", strings.Repeat("0", 64))
	member := filepath.Join(root, "var/lib/etcd/member/snap/db")
	if err := os.MkdirAll(filepath.Dir(member), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(member, []byte("live data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runRestore(t, vm, root, path); err != nil || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("restore over a member: %v\n%s", err, out)
	}
	if db, _ := os.ReadFile(member); string(db) != "live data" || vm.restoreAsks != 0 {
		t.Errorf("the member was touched (%q) or k8sapi asked (%d)", db, vm.restoreAsks)
	}
	if _, err := os.Stat(args); err == nil {
		t.Error("etcdutl ran over a member")
	}
}

// A download whose SHA-256 or size is not the one recorded is refused:
// the script fails before etcdutl runs, and the data dir holds no member.
func TestRestoreScriptRefusesAMismatch(t *testing.T) {
	content := "etcd snapshot of cluster 41"
	sum := sha256.Sum256([]byte(content))
	for name, serve := range map[string]func(*fakeVM){
		"sha256": func(vm *fakeVM) { serveSnapshot(vm, content, strings.Repeat("a", 64)) },
		"size": func(vm *fakeVM) {
			serveSnapshot(vm, content, hex.EncodeToString(sum[:]))
			vm.downloads["/download/etcd-snapshots/41/7.db"] = []byte(content + "!")
		},
	} {
		vm, root, path, args := restoreNode(t)
		serve(vm)
		out, err := runRestore(t, vm, root, path)
		if err == nil || !strings.Contains(out, "not restoring") {
			t.Fatalf("%s mismatch: %v\n%s", name, err, out)
		}
		if _, err := os.Stat(args); err == nil {
			t.Errorf("%s mismatch: etcdutl ran", name)
		}
		if entries, _ := os.ReadDir(filepath.Join(root, "var/lib/etcd")); len(entries) != 0 {
			t.Errorf("%s mismatch: the data dir holds %v", name, entries)
		}
		if scratch, _ := filepath.Glob(filepath.Join(root, "var/lib/etcd.restore.*")); len(scratch) != 0 {
			t.Errorf("%s mismatch: scratch left behind: %v", name, scratch)
		}
	}
}

// restoreAsk answers the restore route with vm.restore (404 while nil).
func (vm *fakeVM) restoreAsk(w http.ResponseWriter, req *http.Request) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.restoreAsks++
	if vm.restore == nil {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(vm.restore)
}

// download serves vm.downloads to a presigned GET.
func (vm *fakeVM) download(w http.ResponseWriter, req *http.Request) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	body, ok := vm.downloads[req.URL.Path]
	if !ok || req.URL.Query().Get("X-Amz-Signature") == "" {
		http.NotFound(w, req)
		return
	}
	_, _ = w.Write(body)
}
