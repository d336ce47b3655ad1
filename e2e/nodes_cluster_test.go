package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// nodeJournals are the units whose journals each node keeps in the run's
// log folder (n<i>_<unit>.journal), pass or fail.
var nodeJournals = []string{"cloud-init-standin", "containerd", "etcd", "kubelet", "exk8s-imds-guard", "exk8s-pod-network", "exk8s-flannel-cni", "exk8s-etcd-snapshot", "exk8s-etcd-crl"}

const adminKubeconfig = "/etc/exk8s/kubeconfig/admin.kubeconfig"

// machineCluster is the founded cluster's VMs, each a booted machine.
type machineCluster struct {
	r        *harness.Run
	machines []*harness.Machine
	vms      []vm
	reach    *reachWatch // the workloads' reachability, watched from boot
	// kubeconfig is the initial node's file kubectl uses: the addons'
	// bootstrap identity (adminKubeconfig) until a CA rotation retires its
	// root, an operator's admin kubeconfig from k8sapi after.
	kubeconfig string
}

// bootCluster boots each VM as a machine (bootVM).
func bootCluster(t *testing.T, r *harness.Run, image string, network *harness.Network, vms []vm, svc services) *machineCluster {
	t.Helper()
	c := &machineCluster{r: r, vms: vms}
	if set, err := harness.MatchConntrackToKubeProxy(); err != nil {
		fatal(t, err)
	} else if set != "" {
		t.Logf("host nf_conntrack_max set to %s, as kube-proxy sets it on a node", set)
	}
	if set, err := harness.RaiseInotifyLimits(); err != nil {
		fatal(t, err)
	} else if len(set) > 0 {
		t.Logf("host inotify limits raised for the machines' shared budget: %s", strings.Join(set, ", "))
	}
	for i, v := range vms {
		c.machines = append(c.machines, bootVM(t, r, image, network.Nodes[i].NS, fmt.Sprintf("n%d", i+1), v, svc))
	}
	return c
}

// bootVM boots one VM as machine name in namespace ns, its cloud-init
// seed carrying the userdata k8sapi gave it and the endpoints as the node
// network sees them.
func bootVM(t *testing.T, r *harness.Run, image, ns, name string, v vm, svc services) *harness.Machine {
	t.Helper()
	seed := harness.Seed{InstanceID: fmt.Sprintf("vm-%d", v.id), Hostname: fmt.Sprintf("vm-%d", v.id),
		UserData: []byte(v.userdata), Env: map[string]string{
			"EXC_IMDS_BASE_URL":        fmt.Sprintf("%s/imds/%d", svc.simURL, v.id),
			"EXK8S_BOOTSTRAP_BASE_URL": svc.apiURL,
		}}
	m, err := harness.BootMachine(r, name, image, ns, filepath.Join(r.WorkDir, name), seed)
	if err != nil {
		fatal(t, err)
	}
	return m
}

// initial is the initial control-plane node (the lowest ordinal: the
// founding answer lists VMs in ordinal order).
func (c *machineCluster) initial() *harness.Machine { return c.machines[0] }

// kubectl runs kubectl with the addons' admin identity on the initial
// node, as an operator logged into it would.
func (c *machineCluster) kubectl(ctx context.Context, args ...string) ([]byte, error) {
	kubeconfig := c.kubeconfig
	if kubeconfig == "" {
		kubeconfig = adminKubeconfig
	}
	return c.initial().Exec(ctx, append([]string{"kubectl", "--kubeconfig=" + kubeconfig}, args...)...)
}

// kubectlJSON runs kubectl ... -o json and decodes the answer into v.
func (c *machineCluster) kubectlJSON(ctx context.Context, v any, args ...string) error {
	out, err := c.kubectl(ctx, append(args, "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}

// waitUserdata waits until every machine's cloud-init stand-in finished
// the userdata: the shim, the prerequisites, the bootstrap and, on the
// initial node, the addons. A failed userdata fails at once with its tail.
func (c *machineCluster) waitUserdata(t *testing.T, tl *timeline) {
	t.Helper()
	for i, m := range c.machines {
		c.waitMachineUserdata(t, m)
		tl.mark(fmt.Sprintf("userdata finished on node %d", i+1))
	}
}

// waitMachineUserdata waits until m's cloud-init stand-in finished the
// userdata; a failed userdata fails at once with its tail.
func (c *machineCluster) waitMachineUserdata(t *testing.T, m *harness.Machine) {
	t.Helper()
	eventually(t, c.r, fmt.Sprintf("userdata finished on %s", m.Name), []string{m.Name + "/console"}, 25*time.Minute, func(ctx context.Context) (string, error) {
		out, _ := m.Exec(ctx, "systemctl", "is-active", "cloud-init-standin.service")
		switch state := strings.TrimSpace(string(out)); state {
		case "active":
			return "active", nil
		case "failed":
			fatalf(t, "the userdata failed on %s:\n%s", m.Name, c.journalTail(ctx, m, "cloud-init-standin", 40))
		default:
			return "", fmt.Errorf("cloud-init-standin is %q", state)
		}
		return "", nil
	})
}

// waitBootstrapReady: k8sapi's own view (GET /clusters/{id}) reaches
// ready from the phases the nodes reported.
func (c *machineCluster) waitBootstrapReady(t *testing.T, st stack, id int64, tl *timeline) {
	t.Helper()
	var b bootstrap
	eventually(t, c.r, "the cluster's bootstrap state ready in the API", nil, 2*time.Minute, func(ctx context.Context) (string, error) {
		var err error
		if b, err = getBootstrap(st, id); err != nil {
			return "", err
		}
		if b.State != "ready" {
			return "", fmt.Errorf("bootstrap state %s (%+v)", b.State, b.Nodes)
		}
		return "ready", nil
	})
	tl.mark("the API says ready")
	t.Logf("each node's bootstrap steps, as GET /clusters/%d shows them:\n%s", id, b.steps())
}

// checkUnits: etcd, containerd and the kubelet are active under systemd on
// every node.
func (c *machineCluster) checkUnits(t *testing.T) {
	t.Helper()
	for _, m := range c.machines {
		eventually(t, c.r, "etcd, containerd and kubelet active on "+m.Name, nil, time.Minute, func(ctx context.Context) (string, error) {
			out, err := m.Exec(ctx, "systemctl", "is-active", "etcd", "containerd", "kubelet")
			if err != nil {
				return "", fmt.Errorf("%s", strings.Join(strings.Fields(string(out)), " "))
			}
			return "active", nil
		})
	}
}

// checkAddonsOnInitialOnly: the addons script ran to its end on the
// initial node and on no other (which also holds no admin identity).
func (c *machineCluster) checkAddonsOnInitialOnly(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, m := range c.machines {
		out, _ := m.Exec(ctx, "journalctl", "-u", "cloud-init-standin", "-o", "cat", "--no-pager")
		ran := strings.Contains(string(out), "exk8s-addons: addons installed")
		_, adminErr := os.Stat(filepath.Join(m.Root, adminKubeconfig))
		if ran != (i == 0) || (adminErr == nil) != (i == 0) {
			errorf(t, "%s: addons ran %v, admin kubeconfig present %v; want both only on the initial node", m.Name, ran, adminErr == nil)
		}
	}
}

// saveJournals keeps each node's journals in the run's log folder.
func (c *machineCluster) saveJournals() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range c.machines {
		for _, unit := range nodeJournals {
			out, err := m.Exec(ctx, "journalctl", "-u", unit, "--no-pager", "-o", "short-precise")
			if err != nil && len(out) == 0 {
				continue
			}
			_ = os.WriteFile(filepath.Join(c.r.LogDir, fmt.Sprintf("%s_%s.journal", m.Name, unit)), out, 0o644)
		}
	}
}

// clusterViews are what the API server says of the cluster, kept in the
// run's log folder (cluster_<name>.txt) when a step failed: a node that
// never became Ready is explained by its conditions and its pods.
var clusterViews = []struct {
	name string
	args []string
}{
	{"nodes", []string{"get", "nodes", "-o", "wide"}},
	{"describe-nodes", []string{"describe", "nodes"}},
	{"pods", []string{"get", "pods", "-A", "-o", "wide"}},
	{"events", []string{"get", "events", "-A", "--sort-by=.lastTimestamp"}},
}

// saveClusterView keeps clusterViews in the log folder if t failed.
func (c *machineCluster) saveClusterView(t *testing.T) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range clusterViews {
		out, err := c.kubectl(ctx, v.args...)
		if err != nil {
			out = append(out, fmt.Sprintf("\n%v\n", err)...)
		}
		_ = os.WriteFile(filepath.Join(c.r.LogDir, "cluster_"+v.name+".txt"), out, 0o644)
	}
}

// journalTail is the last lines of a unit's journal on m.
func (c *machineCluster) journalTail(ctx context.Context, m *harness.Machine, unit string, n int) string {
	out, _ := m.Exec(ctx, "journalctl", "-u", unit, "--no-pager", "-o", "cat", "-n", fmt.Sprint(n))
	return string(out)
}
