package bundle

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeKubectlPrelude begins every fake kubectl: its folder (%q: dir),
// every call failing as an unreachable API server's while dir/fail
// exists, and the call's arguments without the kubeconfig, timeout and
// server (each --server=URL a line of dir/servers).
const fakeKubectlPrelude = `#!/usr/bin/env bash
set -euo pipefail
dir=%q
[[ ! -f "$dir/fail" ]] || { echo "The connection to the server was refused" >&2; exit 1; }
args=() skip=0
for a in "$@"; do
  if ((skip)); then skip=0; continue; fi
  case "$a" in
  --kubeconfig) skip=1 ;;
  --kubeconfig=* | --request-timeout=*) ;;
  --server=*) echo "${a#--server=}" >>"$dir/servers" ;;
  *) args+=("$a") ;;
  esac
done
set -- "${args[@]}"
`

// fakeKubectlIn writes a fake kubectl in dir: the prelude, then body.
func fakeKubectlIn(t *testing.T, dir, body string) {
	t.Helper()
	writeExec(t, filepath.Join(dir, "kubectl"), strings.Replace(fakeKubectlPrelude, "%q", "'"+dir+"'", 1)+body)
}

// fakeKubectl answers as the API server would answer the node's own
// identity, over pods.json in dir: the node's pods listed by node, an
// eviction that removes the pod unless its PodDisruptionBudget still
// refuses (refuse-<name> holds how many more times; "always" for ever:
// 429), cordon and delete of the Node. Every call is a line of dir/calls.
// While dir/kubelet-cut-off exists (a retired control-plane node, whose
// kubelet reaches only its own API server, out of etcd), an evicted pod
// is never gone: it stays listed, terminating.
const fakeKubectl = `echo "$*" >>"$dir/calls"
case "$1 $2" in
"get pods")
  jq '{items: .}' "$dir/pods.json"
  # A terminating pod is gone by the next list, unless its kubelet is cut off.
  if [[ ! -f "$dir/kubelet-cut-off" ]]; then
    jq 'map(select(.metadata.deletionTimestamp == null))' "$dir/pods.json" >"$dir/pods.next"
    mv "$dir/pods.next" "$dir/pods.json"
  fi ;;
"create --raw")
  name="$(cut -d/ -f7 <<<"$3")"
  if [[ -f "$dir/refuse-$name" ]]; then
    left="$(cat "$dir/refuse-$name")"
    if [[ "$left" == always || "$left" -gt 0 ]]; then
      [[ "$left" == always ]] || echo $((left - 1)) >"$dir/refuse-$name"
      echo "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget." >&2
      exit 1
    fi
  fi
  if [[ -f "$dir/kubelet-cut-off" ]]; then
    jq --arg n "$name" 'map(if .metadata.name == $n then .metadata.deletionTimestamp = "2026-01-01T00:00:00Z" else . end)' \
      "$dir/pods.json" >"$dir/pods.next"
  else
    jq --arg n "$name" 'map(select(.metadata.name != $n))' "$dir/pods.json" >"$dir/pods.next"
  fi
  mv "$dir/pods.next" "$dir/pods.json" ;;
"delete node")
  [[ ! -f "$dir/refuse-delete" ]] || { echo "Error from server (Forbidden): nodes is forbidden" >&2; exit 1; } ;;
"cordon "* | "uncordon "*) ;;
*) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
`

// nodePods is what the worker runs: a Deployment's two pods, a mirror pod,
// a DaemonSet's pod, a finished Job's pod and one already terminating.
const nodePods = `[
 {"metadata": {"namespace": "web", "name": "web-1", "ownerReferences": [{"kind": "ReplicaSet", "controller": true}]}, "status": {"phase": "Running"}},
 {"metadata": {"namespace": "web", "name": "web-2", "ownerReferences": [{"kind": "ReplicaSet", "controller": true}]}, "status": {"phase": "Running"}},
 {"metadata": {"namespace": "kube-system", "name": "static-1", "annotations": {"kubernetes.io/config.mirror": "x"}}, "status": {"phase": "Running"}},
 {"metadata": {"namespace": "kube-system", "name": "proxy-1", "ownerReferences": [{"kind": "DaemonSet", "controller": true}]}, "status": {"phase": "Running"}},
 {"metadata": {"namespace": "jobs", "name": "done-1"}, "status": {"phase": "Succeeded"}},
 {"metadata": {"namespace": "web", "name": "going-1", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}}
]`

// drainHost is a node whose bundle is installed (a worker's, or a
// control-plane node's), with a fake kubectl over nodePods and a fake
// systemctl whose job list is jobs.
type drainHost struct {
	root, node string
	server     string // the cluster's endpoint, where every call must go
	env        []string
	dir, path  string
}

// newDrainHost is a worker's drainHost.
func newDrainHost(t *testing.T, jobs string) *drainHost {
	t.Helper()
	w := newWorkerHost(t)
	return withDrainFakes(t, &drainHost{root: w.root, node: w.in.Worker.Name, server: WorkerAPIServerURL(w.in.Cluster),
		env: w.vm.env(w.root)}, jobs)
}

// newControlPlaneDrainHost is a control-plane node's drainHost (VM 102 of
// the test cluster), retired as k8sapi retires one: its etcd member gone,
// so its kubelet never sees its evicted pods deleted (kubelet-cut-off).
func newControlPlaneDrainHost(t *testing.T, jobs string) *drainHost {
	t.Helper()
	c, nodes := testCluster()
	_, vm, root := installedNode(t, c, nodes)
	var name string
	for _, n := range nodes {
		if n.VMID == 102 {
			name = n.Name
		}
	}
	h := withDrainFakes(t, &drainHost{root: root, node: name, server: WorkerAPIServerURL(c), env: vm.env(root)}, jobs)
	writeExec(t, filepath.Join(h.dir, "kubelet-cut-off"), "")
	return h
}

func withDrainFakes(t *testing.T, h *drainHost, jobs string) *drainHost {
	t.Helper()
	h.dir = t.TempDir()
	writeExec(t, filepath.Join(h.dir, "pods.json"), nodePods)
	fakeKubectlIn(t, h.dir, fakeKubectl)
	writeExec(t, filepath.Join(h.dir, "systemctl"), "#!/usr/bin/env bash\nprintf '%s\\n' "+jobs+"\n")
	h.path = h.dir + string(os.PathListSeparator) + os.Getenv("PATH")
	return h
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// drain runs the installed drain script as its unit does at power-off,
// waiting at most seconds for pods unless k8sapi told another bound.
func (h *drainHost) drain(t *testing.T, seconds string) (string, []string) {
	t.Helper()
	return h.run(t, "--if-powering-off", "EXK8S_DRAIN_SECONDS="+seconds)
}

// run runs the installed drain script with arg, as its units do, and
// answers its output and its kubectl calls so far.
func (h *drainHost) run(t *testing.T, arg string, env ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(h.root, "usr/local/bin/exk8s-drain-node.sh"), arg)
	cmd.Env = append(append(append(os.Environ(), h.env...), "PATH="+h.path, "EXK8S_DRAIN_INTERVAL=0"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the drain (%s) must never fail its unit: %v\n%s", arg, err, out)
	}
	calls, _ := os.ReadFile(filepath.Join(h.dir, "calls"))
	return string(out), strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(calls)), "\n", "|"))
}

// servers are the API servers the drain's calls went to, each once.
func (h *drainHost) servers(t *testing.T) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(h.dir, "servers"))
	return slices.Compact(slices.Sorted(slices.Values(strings.Fields(string(b)))))
}

// callLines is calls split back into one kubectl call each.
func callLines(calls []string) []string {
	return strings.Split(strings.Join(calls, " "), "|")
}

// Powering off: the worker cordons its Node, evicts the pods a drain
// moves (not its mirror pods, its DaemonSet's, a finished one, or one
// already terminating), asks again while a PodDisruptionBudget refuses,
// waits until they are gone, and deletes its Node last.
func TestDrainEvictsItsPodsThenDeletesItsNode(t *testing.T) {
	h := newDrainHost(t, "'1 poweroff.target start waiting'")
	writeExec(t, filepath.Join(h.dir, "refuse-web-2"), "2")
	out, calls := h.drain(t, "30")
	lines := callLines(calls)
	node := h.node
	if lines[0] != "cordon "+node || lines[len(lines)-1] != "delete node "+node+" --wait=false" {
		t.Fatalf("want cordon first and the Node's deletion last, got %q\n%s", lines, out)
	}
	evictions := map[string]int{}
	for _, l := range lines {
		if strings.HasPrefix(l, "create --raw") {
			evictions[strings.Split(l, "/")[6]]++
		}
	}
	if evictions["web-1"] != 1 || evictions["web-2"] != 3 || len(evictions) != 2 {
		t.Errorf("evictions %v, want web-1 once and web-2 three times (refused twice by its budget), nothing else\n%s", evictions, out)
	}
	if !strings.Contains(out, "disruption budget") || !strings.Contains(out, "deleted Node "+node) {
		t.Errorf("the log should say the budget refused and the Node was deleted:\n%s", out)
	}
	if got := h.servers(t); !slices.Equal(got, []string{h.server}) {
		t.Errorf("the drain's calls went to %q, want the cluster's endpoint %s only", got, h.server)
	}
}

// A control-plane node k8sapi retires (a replacement's old node, a
// shrink's leaving member) drains itself the same way at power-off, at
// the cluster's endpoint (its own API server is out of etcd by then):
// cordon, its pods evicted (not its static pods' mirrors), asked again
// while a budget refuses, its Node deleted last. Its kubelet cannot end
// the evicted pods, so it waits until every eviction is granted, not for
// them to be gone: the 30 s bound is never reached.
func TestAControlPlaneNodeDrainsItselfAtPowerOff(t *testing.T) {
	h := newControlPlaneDrainHost(t, "'1 poweroff.target start waiting'")
	writeExec(t, filepath.Join(h.dir, "refuse-web-2"), "2")
	out, calls := h.drain(t, "30")
	lines := callLines(calls)
	if lines[0] != "cordon "+h.node || lines[len(lines)-1] != "delete node "+h.node+" --wait=false" {
		t.Fatalf("want cordon first and the Node's deletion last, got %q\n%s", lines, out)
	}
	evictions := map[string]int{}
	for _, l := range lines {
		if strings.HasPrefix(l, "create --raw") {
			evictions[strings.Split(l, "/")[6]]++
		}
	}
	if evictions["web-1"] != 1 || evictions["web-2"] != 3 || len(evictions) != 2 {
		t.Errorf("evictions %v, want web-1 once and web-2 three times (refused twice by its budget), nothing else\n%s", evictions, out)
	}
	if !strings.Contains(out, "every pod of "+h.node+" is evicted") || strings.Contains(out, "pods still on") ||
		!strings.Contains(out, "deleted Node "+h.node) {
		t.Errorf("want every pod evicted without waiting out the bound, then the Node deleted:\n%s", out)
	}
	if got := h.servers(t); !slices.Equal(got, []string{h.server}) {
		t.Errorf("the drain's calls went to %q, want the cluster's endpoint %s only", got, h.server)
	}
}

// A control-plane node's reboot is no retirement: nothing is called.
func TestAControlPlaneNodeDrainSkipsAReboot(t *testing.T) {
	h := newControlPlaneDrainHost(t, "'1 reboot.target start waiting' '2 poweroff.target start waiting'")
	out, calls := h.drain(t, "30")
	if len(calls) != 0 || !strings.Contains(out, "a reboot") {
		t.Errorf("a reboot called kubectl %q\n%s", calls, out)
	}
}

// A budget that never allows the disruption does not hold the power-off:
// the wait is bounded, the pod is named in the log, and the Node is
// deleted all the same (the pod garbage collector then deletes the pod,
// and its controller starts it elsewhere).
func TestDrainWaitIsBounded(t *testing.T) {
	h := newDrainHost(t, "'1 poweroff.target start waiting'")
	writeExec(t, filepath.Join(h.dir, "refuse-web-2"), "always")
	out, calls := h.drain(t, "1")
	lines := callLines(calls)
	if lines[len(lines)-1] != "delete node "+h.node+" --wait=false" {
		t.Fatalf("the Node must be deleted after the bounded wait, got %q\n%s", lines, out)
	}
	// Which other pods the line still lists depends on how far the
	// evictions got in the second (a loaded machine is slow): only the
	// refused one must be there.
	if !strings.Contains(out, "pods still on "+h.node+" after 1 s: ") || !strings.Contains(out, "web web-2 false") {
		t.Errorf("the log should name the pod that stayed:\n%s", out)
	}
}

// A reboot is not a removal: the worker stays in its cluster, untouched.
func TestDrainSkipsAReboot(t *testing.T) {
	h := newDrainHost(t, "'1 reboot.target start waiting' '2 poweroff.target start waiting'")
	out, calls := h.drain(t, "30")
	if len(calls) != 0 || !strings.Contains(out, "a reboot") {
		t.Errorf("a reboot called kubectl %q\n%s", calls, out)
	}
}

// The bound of the wait for pods is what k8sapi told the worker (the
// running upgrade that retires it, kept by the health script), while that
// word is fresh and in range; else the bundle's default.
func TestDrainWaitsForTheBoundItWasTold(t *testing.T) {
	stale := time.Now().Add(-drainWordAge - time.Minute)
	for _, c := range []struct {
		name, told string
		at         time.Time
		want       string
	}{
		{"told 45", "45", time.Now(), "for at most 45 s (k8sapi's"},
		{"told the longest", "3600", time.Now(), "for at most 3600 s (k8sapi's"},
		{"nothing told", "", time.Time{}, "for at most 30 s (the bundle's default)"},
		{"told too long ago", "45", stale, "for at most 30 s (the bundle's default)"},
		{"told below the range", "5", time.Now(), "for at most 30 s (the bundle's default)"},
		{"told above the range", "3601", time.Now(), "for at most 30 s (the bundle's default)"},
		{"told garbage", "45; rm -rf /", time.Now(), "for at most 30 s (the bundle's default)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newDrainHost(t, "'1 poweroff.target start waiting'")
			if c.told != "" {
				bound := filepath.Join(h.root, DrainBoundFile)
				if err := os.MkdirAll(filepath.Dir(bound), 0o755); err != nil {
					t.Fatal(err)
				}
				writeExec(t, bound, c.told+"\n")
				if err := os.Chtimes(bound, c.at, c.at); err != nil {
					t.Fatal(err)
				}
			}
			out, calls := h.drain(t, "30")
			if !strings.Contains(out, "draining "+h.node+" "+c.want) {
				t.Errorf("want the drain %q, got:\n%s", c.want, out)
			}
			if lines := callLines(calls); lines[len(lines)-1] != "delete node "+h.node+" --wait=false" {
				t.Errorf("the Node was not deleted: %q", lines)
			}
		})
	}
}

// A drain marks its cordon until its Node is deleted. A worker that stays
// (its VM powered on again) after a drain whose Node's deletion failed
// finds the mark at its next start and uncordons its Node, once; without
// a mark (a Node the operator cordoned) it does nothing.
func TestACordonLeftByAFailedDrainIsUndoneOnAWorkerThatStays(t *testing.T) {
	h := newDrainHost(t, "'1 poweroff.target start waiting'")
	mark := filepath.Join(h.root, DrainCordonMark)
	if out, _ := h.drain(t, "30"); fileExists(mark) || !strings.Contains(out, "deleted Node") {
		t.Fatalf("a drain that deleted its Node left its cordon's mark:\n%s", out)
	}
	if out, calls := h.run(t, "--undo-cordon"); strings.Contains(strings.Join(calls, " "), "uncordon") {
		t.Fatalf("uncordoned without a mark: %q\n%s", calls, out)
	}

	h = newDrainHost(t, "'1 poweroff.target start waiting'")
	mark = filepath.Join(h.root, DrainCordonMark)
	writeExec(t, filepath.Join(h.dir, "refuse-delete"), "")
	if out, _ := h.drain(t, "30"); !fileExists(mark) || !strings.Contains(out, "could not delete Node") {
		t.Fatalf("a drain whose Node's deletion failed left no mark:\n%s", out)
	}
	out, calls := h.run(t, "--undo-cordon")
	lines := callLines(calls)
	if lines[len(lines)-1] != "uncordon "+h.node || fileExists(mark) || !strings.Contains(out, "uncordoned "+h.node) {
		t.Fatalf("want the Node uncordoned and the mark gone, got %q (mark there: %v)\n%s", lines, fileExists(mark), out)
	}
	if _, again := h.run(t, "--undo-cordon"); len(callLines(again)) != len(lines) {
		t.Errorf("uncordoned a second time: %q", callLines(again))
	}

	// The API server not answering yet: asked again, the mark kept when
	// every try failed, for the next start.
	h = newDrainHost(t, "'1 poweroff.target start waiting'")
	mark = filepath.Join(h.root, DrainCordonMark)
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err != nil {
		t.Fatal(err)
	}
	writeExec(t, mark, "")
	writeExec(t, filepath.Join(h.dir, "fail"), "")
	if out, _ := h.run(t, "--undo-cordon", "EXK8S_UNDO_TRIES=3"); !fileExists(mark) || !strings.Contains(out, "after 3 tries") {
		t.Errorf("want the mark kept after 3 failed tries (exists: %v):\n%s", fileExists(mark), out)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
