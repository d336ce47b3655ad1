package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMembershipEtcdctl puts an etcdctl on PATH that lists members (cp-1,
// this node, and cp-3), says leader is the leader, and records each call,
// one line each, in calls.
func fakeMembershipEtcdctl(t *testing.T, leader string) (path, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/usr/bin/env bash
echo "$*" >>` + calls + `
case "$*" in
  *"member list"*)
    echo '8e9e05c52164694d, started, cp-1.cluster-42.internal, https://10.0.0.1:2380, https://10.0.0.1:2379, false'
    echo '91bc3c398fb3c146, started, cp-3.cluster-42.internal, https://10.0.0.3:2380, https://10.0.0.3:2379, false' ;;
  *"endpoint status"*)
    echo '"ClusterID" : 1'
    echo '"MemberID" : 10276657743932975437'
    echo '"Leader" : ` + leader + `' ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "etcdctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH"), calls
}

// Nothing to remove: the script asks, k8sapi answers 204, etcdctl never
// runs. Asked to remove cp-3, which leads: the leadership moves to this
// member first (etcdctl given every member's endpoint to find the
// leader), then cp-3 is removed by its ID and the removal reported. A
// member already gone is reported again, nothing removed.
func TestEtcdMembershipScriptMovesTheLeaderRemovesAndReports(t *testing.T) {
	_, vm, root := renewalNode(t)
	path, calls := fakeMembershipEtcdctl(t, "10501334649042878790") // 91bc3c398fb3c146: cp-3
	if out, err := runNodeScript(t, vm, root, EtcdMembershipScript, path); err != nil {
		t.Fatalf("nothing to remove: %v\n%s", err, out)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Fatal("etcdctl ran with nothing to remove")
	}
	vm.membership = []byte(`{"cluster_id":42,"remove":[{"name":"cp-3.cluster-42.internal"}]}`)
	out, err := runNodeScript(t, vm, root, EtcdMembershipScript, path)
	if err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	used, _ := os.ReadFile(calls)
	moved := strings.Index(string(used), "--endpoints=https://10.0.0.1:2379,https://10.0.0.3:2379")
	removed := strings.Index(string(used), "member remove 91bc3c398fb3c146")
	if moved < 0 || !strings.Contains(string(used), "move-leader 8e9e05c52164694d") || removed < moved {
		t.Fatalf("etcdctl calls, want move-leader to this member then member remove of cp-3:\n%s\n%s", used, out)
	}
	if len(vm.membershipReports) != 1 || vm.membershipReports[0]["name"] != "cp-3.cluster-42.internal" {
		t.Fatalf("reports %v", vm.membershipReports)
	}
	vm.membership = []byte(`{"cluster_id":42,"remove":[{"name":"cp-5.cluster-42.internal"}]}`)
	if out, err := runNodeScript(t, vm, root, EtcdMembershipScript, path); err != nil || !strings.Contains(out, "removed already") {
		t.Fatalf("a member already gone: %v\n%s", err, out)
	}
	if used2, _ := os.ReadFile(calls); strings.Count(string(used2), "member remove") != 1 || len(vm.membershipReports) != 2 {
		t.Fatalf("a member already gone was removed, or not reported: %s %v", used2, vm.membershipReports)
	}
}

// A leader that stays is not moved.
func TestEtcdMembershipScriptLeavesAStayingLeader(t *testing.T) {
	_, vm, root := renewalNode(t)
	path, calls := fakeMembershipEtcdctl(t, "10276657743932975437") // this member
	vm.membership = []byte(`{"cluster_id":42,"remove":[{"name":"cp-3.cluster-42.internal"}]}`)
	if out, err := runNodeScript(t, vm, root, EtcdMembershipScript, path); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if used, _ := os.ReadFile(calls); strings.Contains(string(used), "move-leader") || !strings.Contains(string(used), "member remove 91bc3c398fb3c146") {
		t.Fatalf("etcdctl calls:\n%s", used)
	}
}
