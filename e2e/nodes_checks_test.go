package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// kubeList is the part of a kubectl -o json list the checks read.
type kubeList struct {
	Items []struct {
		Metadata struct {
			Name        string            `json:"name"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
		Status struct {
			Phase      string `json:"phase"`
			PodIP      string `json:"podIP"`
			Conditions []struct {
				Type               string    `json:"type"`
				Status             string    `json:"status"`
				LastHeartbeatTime  time.Time `json:"lastHeartbeatTime"`
				LastTransitionTime time.Time `json:"lastTransitionTime"`
			} `json:"conditions"`
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
			NodeInfo struct {
				KubeletVersion string `json:"kubeletVersion"`
			} `json:"nodeInfo"`
		} `json:"status"`
	} `json:"items"`
}

// condition returns the status of an item's condition of that type.
func condition(item int, l kubeList, typ string) string {
	status, _ := conditionSince(item, l, typ)
	return status
}

// conditionSince returns the status of an item's condition of that type
// and when its reporter last confirmed it.
func conditionSince(item int, l kubeList, typ string) (string, time.Time) {
	for _, c := range l.Items[item].Status.Conditions {
		if c.Type == typ {
			return c.Status, c.LastHeartbeatTime
		}
	}
	return "", time.Time{}
}

// lastTransition is the latest moment any item's condition of that type
// last changed: for Ready, when the last Node became Ready.
func lastTransition(l kubeList, typ string) time.Time {
	var latest time.Time
	for _, item := range l.Items {
		for _, c := range item.Status.Conditions {
			if c.Type == typ && c.LastTransitionTime.After(latest) {
				latest = c.LastTransitionTime
			}
		}
	}
	return latest
}

// checkNodesReady: every VM is a Node, registered by its own kubelet (its
// version, its address), Ready, labelled control-plane.
func (c *machineCluster) checkNodesReady(t *testing.T, vms []vm, tl *timeline) {
	t.Helper()
	var readySince time.Time
	eventually(t, c.r, "every Node Ready", c.consoles(), 5*time.Minute, func(ctx context.Context) (string, error) {
		var nodes kubeList
		if err := c.kubectlJSON(ctx, &nodes, "get", "nodes"); err != nil {
			return "", err
		}
		var ready []string
		for i, n := range nodes.Items {
			addr := ""
			for _, a := range n.Status.Addresses {
				if a.Type == "InternalIP" {
					addr = a.Address
				}
			}
			_, labelled := n.Metadata.Labels["node-role.kubernetes.io/control-plane"]
			if condition(i, nodes, "Ready") == "True" && n.Status.NodeInfo.KubeletVersion == nodeVersions.Kubernetes && labelled && vmHas(vms, addr) {
				ready = append(ready, n.Metadata.Name)
			}
		}
		if len(ready) != len(vms) {
			return "", fmt.Errorf("%d of %d Nodes Ready, labelled and at a VM's address: %v", len(ready), len(vms), ready)
		}
		readySince = lastTransition(nodes, "Ready")
		return strings.Join(ready, ", "), nil
	})
	// The proof looks at the Nodes only once every userdata has finished
	// (the addons included): the time the last Node became Ready is its
	// Ready condition's, as its kubelet recorded it (the machines share
	// this host's clock).
	tl.markAt("every node Ready", readySince)
	tl.mark("every node Ready, seen by the proof")
}

func vmHas(vms []vm, addr string) bool {
	return slices.ContainsFunc(vms, func(v vm) bool { return v.addr.Addr().String() == addr })
}

// consoles are the machines' console logs, the suspects of a node check.
func (c *machineCluster) consoles() []string {
	var out []string
	for _, m := range c.machines {
		out = append(out, m.Name+"/console")
	}
	return out
}

// checkMirrorPods: each node's static pods run, seen as mirror pods.
func (c *machineCluster) checkMirrorPods(t *testing.T) {
	t.Helper()
	eventually(t, c.r, "every node's static pods Running", nil, 3*time.Minute, func(ctx context.Context) (string, error) {
		var pods kubeList
		if err := c.kubectlJSON(ctx, &pods, "-n", "kube-system", "get", "pods"); err != nil {
			return "", err
		}
		running := map[string]int{}
		for i, p := range pods.Items {
			if _, mirror := p.Metadata.Annotations["kubernetes.io/config.mirror"]; mirror && p.Status.Phase == "Running" && condition(i, pods, "Ready") == "True" {
				running[p.Spec.NodeName]++
			}
		}
		if len(running) != len(c.machines) {
			return "", fmt.Errorf("ready mirror pods per node: %v", running)
		}
		for node, n := range running {
			if n != 3 {
				return "", fmt.Errorf("node %s has %d of 3 control-plane mirror pods ready", node, n)
			}
		}
		return fmt.Sprintf("3 on each of %d nodes", len(running)), nil
	})
}

// checkAddonsReady: kube-proxy on every node and CoreDNS are ready.
func (c *machineCluster) checkAddonsReady(t *testing.T) {
	t.Helper()
	addons := []string{"daemonset/kube-proxy", "deployment/coredns"}
	if proofCNI == "flannel" {
		addons = append([]string{"daemonset/flannel"}, addons...)
	}
	for _, what := range addons {
		eventually(t, c.r, what+" ready", nil, 3*time.Minute, func(ctx context.Context) (string, error) {
			out, err := c.kubectl(ctx, "-n", "kube-system", "rollout", "status", what, "--timeout=5s")
			return strings.TrimSpace(string(out)), err
		})
	}
}

// timeline records when each phase of the proof was reached, from the
// moment POST /clusters was sent, less the proof's own set-up (the
// mirror, the registry and its images, the machines): a real platform has
// those before anyone calls k8sapi, so they are not the product's time.
type timeline struct {
	t0         time.Time
	setUp      time.Duration
	setUpSince time.Time
	phases     []string
	times      map[string]time.Duration
	operations []phaseSeconds // timed operations on the live cluster (took)
}

func newTimeline() *timeline { return &timeline{times: map[string]time.Duration{}} }

func (tl *timeline) start() { tl.t0 = time.Now() }

// setUpStarts and setUpEnds bracket the proof's own set-up.
func (tl *timeline) setUpStarts() { tl.setUpSince = time.Now() }

func (tl *timeline) setUpEnds() { tl.setUp += time.Since(tl.setUpSince) }

func (tl *timeline) mark(phase string) { tl.markAt(phase, time.Now()) }

// markAt records a phase reached at a moment of the past, after the
// set-up (the set-up ends before anything the product does on the nodes).
func (tl *timeline) markAt(phase string, at time.Time) {
	tl.phases = append(tl.phases, phase)
	tl.times[phase] = at.Sub(tl.t0) - tl.setUp
}

func (tl *timeline) at(phase string) time.Duration { return tl.times[phase] }

// report prints every phase with its time since POST /clusters, set-up
// excluded.
func (tl *timeline) report(t *testing.T) {
	var b strings.Builder
	slices.SortStableFunc(tl.phases, func(a, b string) int { return cmp.Compare(tl.times[a], tl.times[b]) })
	for _, p := range tl.phases {
		fmt.Fprintf(&b, "  %7.1f s  %s\n", tl.times[p].Seconds(), p)
	}
	t.Logf("phases, from POST /clusters, the proof's set-up (mirror, registry, images, machines: %.1f s) excluded:\n%s", tl.setUp.Seconds(), b.String())
}

// writeInMachine puts a file into the machine's root filesystem.
func (c *machineCluster) writeInMachine(i int, path string, content []byte) error {
	full := filepath.Join(c.machines[i].Root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, content, 0o600) // kubeconfigs with keys among them
}
