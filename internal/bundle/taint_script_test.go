package bundle

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTaintKubectl answers the taint's calls over nodes.json in dir, as
// the API server would: Nodes listed by the pool label, this node read,
// its taint added or removed, its label added. Every call that is not a read is a line of
// dir/writes.
const fakeTaintKubectl = `case "$1 $2" in
"get nodes") jq --arg l "$4" '{items: [.[] | select(.metadata.labels[$l] != null)]}' "$dir/nodes.json" ;;
"get node") jq --arg n "$3" '.[] | select(.metadata.name == $n)' "$dir/nodes.json" ;;
"taint nodes")
  echo "$*" >>"$dir/writes"
  key="${4%%:*}"
  if [[ "$4" == *- ]]; then
    jq --arg n "$3" --arg k "$key" 'map(if .metadata.name == $n then .spec.taints |= map(select(.key != $k)) else . end)' "$dir/nodes.json" >"$dir/next"
  else
    jq --arg n "$3" --arg k "$key" 'map(if .metadata.name == $n then .spec.taints += [{key: $k, effect: "NoSchedule"}] else . end)' "$dir/nodes.json" >"$dir/next"
  fi
  mv "$dir/next" "$dir/nodes.json" ;;
"label node")
  echo "$*" >>"$dir/writes"
  jq --arg n "$3" --arg k "${4%=}" 'map(if .metadata.name == $n then .metadata.labels[$k] = "" else . end)' "$dir/nodes.json" >"$dir/next"
  mv "$dir/next" "$dir/nodes.json" ;;
*) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
`

// taintNode is a Node of the fake: this control-plane node, tainted or
// not, or a worker of pool web, Ready or not, cordoned or not.
func taintNode(name string, worker, ready, cordoned, tainted bool) map[string]any {
	labels := map[string]string{ControlPlaneTaintKey: ""}
	if worker {
		labels = map[string]string{WorkerPoolLabel: "web"}
	}
	taints := []map[string]string{}
	if tainted {
		taints = append(taints, map[string]string{"key": ControlPlaneTaintKey, "effect": "NoSchedule"})
	}
	status := map[string]string{"type": "Ready", "status": "False"}
	if ready {
		status["status"] = "True"
	}
	return map[string]any{"metadata": map[string]any{"name": name, "labels": labels},
		"spec":   map[string]any{"unschedulable": cordoned, "taints": taints},
		"status": map[string]any{"conditions": []any{status}}}
}

// Three rounds label this control-plane node's Node when it lacks its
// role label (once), taint it while a pool has a Ready,
// schedulable worker, untaint it when none is left (a cordoned or NotReady
// one does not count), write nothing when the taint is as it must be, and
// survive an API server they cannot reach; each change, or failure, is one
// line of log, and nothing is logged when nothing changes.
func TestControlPlaneTaintFollowsTheWorkers(t *testing.T) {
	b, vm, root := renewalNode(t)
	self := b.Metadata.NodeName
	taint := "taint nodes " + self + " " + ControlPlaneTaintKey + ":NoSchedule"
	for _, tc := range []struct {
		name            string
		tainted         bool
		unlabelled      bool           // a replacement's Node: no role label yet
		worker          map[string]any // nil: no worker
		fail            bool
		writes, logSays string
	}{
		{name: "no worker: schedulable", writes: "", logSays: ""},
		{name: "a Ready worker: tainted", worker: taintNode("web-4", true, true, false, false), writes: taint + " --overwrite", logSays: "1 Ready worker(s): tainted"},
		{name: "tainted already: nothing written", tainted: true, worker: taintNode("web-4", true, true, false, false), writes: "", logSays: ""},
		{name: "the worker NotReady: untainted", tainted: true, worker: taintNode("web-4", true, false, false, false), writes: taint + "-", logSays: "takes workloads again"},
		{name: "the worker cordoned: untainted", tainted: true, worker: taintNode("web-4", true, true, true, false), writes: taint + "-", logSays: "takes workloads again"},
		{name: "no role label (a replacement): labelled once", unlabelled: true, writes: "label node " + self + " " + ControlPlaneTaintKey + "=", logSays: "labelled " + self},
		{name: "no API server: logged once in 3 rounds", fail: true, writes: "", logSays: "cannot read the Nodes or set the taint, trying again every 0 s: The connection to the server was refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			own := taintNode(self, false, true, false, tc.tainted)
			if tc.unlabelled {
				own["metadata"].(map[string]any)["labels"] = map[string]string{}
			}
			nodes := []any{own}
			if tc.worker != nil {
				nodes = append(nodes, tc.worker)
			}
			raw, _ := json.Marshal(nodes)
			writeExec(t, filepath.Join(dir, "nodes.json"), string(raw))
			fakeKubectlIn(t, dir, fakeTaintKubectl)
			if tc.fail {
				writeExec(t, filepath.Join(dir, "fail"), "")
			}
			cmd := exec.Command("bash", filepath.Join(root, "usr/local/bin", ControlPlaneTaintUnit+".sh"))
			cmd.Env = append(append(os.Environ(), vm.env(root)...), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
				"EXK8S_TAINT_ROUNDS=3", "EXK8S_TAINT_EVERY=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("a round must not fail: %v\n%s", err, out)
			}
			writes, _ := os.ReadFile(filepath.Join(dir, "writes"))
			if got := strings.TrimSpace(string(writes)); got != tc.writes {
				t.Errorf("wrote %q, want %q\n%s", got, tc.writes, out)
			}
			if lines := strings.Count(string(out), "\n"); tc.logSays == "" && lines > 0 || tc.logSays != "" && lines != 1 ||
				!strings.Contains(string(out), tc.logSays) {
				t.Errorf("log %q, want one line saying %q in 3 rounds (none when nothing changed)", out, tc.logSays)
			}
		})
	}
}
