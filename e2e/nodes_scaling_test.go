package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The control-plane scaling on booted nodes (issue 39): 3 → 5 → 3 with
// PATCH /clusters/{id}, each VM k8sapi creates booted as it appears, each
// one k8sapi deletes powered off, while the quorum writer and the API
// probe count what fails. Growing: every new member joins as a learner and
// is promoted, five voters, five Nodes Ready. Shrinking: two members
// removed one at a time, three voters, every member healthy.

// scaleTo asks for count control-plane nodes; the scaling must be
// accepted (202) once the one before it has ended (until then 409
// control_plane_scaling: its last steps, the DNS name and the operation's
// end, follow the new Nodes' Ready).
func (p *provenCluster) scaleTo(t *testing.T, count int) {
	t.Helper()
	path, body := fmt.Sprintf("/clusters/%d", p.cl.ClusterID), fmt.Sprintf(`{"control_plane_count":%d}`, count)
	eventually(t, p.r, fmt.Sprintf("PATCH control_plane_count %d accepted", count), []string{"stack"}, 5*time.Minute, func(context.Context) (string, error) {
		code, raw, err := apiAnswer(p.st, http.MethodPatch, path, body)
		switch {
		case err != nil:
			return "", err
		case code == http.StatusConflict && strings.Contains(string(raw), `"control_plane_scaling"`):
			return "", fmt.Errorf("the scaling before runs: %s", raw)
		case code != http.StatusAccepted:
			fatalf(t, "PATCH %s: %d %s, want 202", path, code, raw)
		}
		return string(raw), nil
	})
}

// checkScaling grows the control plane to 5 and shrinks it back to 3,
// and says what held.
func (p *provenCluster) checkScaling(t *testing.T) []string {
	t.Helper()
	w := p.c.startWriter("scale-write")
	t.Cleanup(func() { w.finish() })
	api := p.startAPIProbe(t)
	t.Cleanup(func() { api.finish() })
	start := time.Now()
	p.scaleTo(t, 5)
	p.growTo(t, 5)
	grown := time.Now()
	p.scaleTo(t, 3)
	p.shrinkTo(t, 3)
	p.tl.took("control plane 3 → 5", grown.Sub(start))
	p.tl.took("control plane 5 → 3", time.Since(grown))
	writes, failed := w.finish()
	asked, missed := api.finish()
	for _, f := range append(failed, missed...) {
		t.Log("  " + f)
	}
	summary := fmt.Sprintf("scaled control plane 3 → 5 → 3 in %.0f s (up %.0f s, down %.0f s); API probe %d/%d failed, writes %d/%d failed",
		time.Since(start).Seconds(), grown.Sub(start).Seconds(), time.Since(grown).Seconds(), len(missed), asked, len(failed), writes)
	t.Log(summary)
	if len(failed) > 0 {
		fatalf(t, "%d of %d writes during the scaling failed (etcd quorum lost?)", len(failed), writes)
	}
	return []string{summary}
}

// growTo boots every control-plane VM k8sapi creates until count members
// vote and count Nodes are Ready.
func (p *provenCluster) growTo(t *testing.T, count int) {
	t.Helper()
	eventually(t, p.r, fmt.Sprintf("%d voting etcd members, every new VM booted", count), p.c.consoles(), 20*time.Minute,
		func(ctx context.Context) (string, error) {
			if err := p.bootNewControlPlaneVMs(t); err != nil {
				return "", err
			}
			return p.c.votingMembers(ctx, count)
		})
	eventually(t, p.r, "every etcd member healthy", nil, 2*time.Minute, p.c.etcdHealthy)
	eventually(t, p.r, fmt.Sprintf("%d control-plane Nodes Ready", count), p.c.consoles(), 5*time.Minute, func(ctx context.Context) (string, error) {
		return p.c.readyCount(ctx, count)
	})
}

// bootNewControlPlaneVMs boots each control-plane VM the API lists with
// an address that is not one of the proof's machines yet.
func (p *provenCluster) bootNewControlPlaneVMs(t *testing.T) error {
	cv, err := getCluster(p.st, p.cl.ClusterID)
	if err != nil {
		return err
	}
	for _, n := range cv.Nodes {
		if n.VMID == 0 || n.IPv4 == "" || !slices.Contains(cv.ControlPlaneVMIDs, n.VMID) || p.c.index(n.VMID) >= 0 {
			continue
		}
		v := loadVMs(t, p.st, []int64{n.VMID})[0]
		node, err := p.network.AddNode(v.addr)
		if err != nil {
			fatal(t, err)
		}
		m := bootVM(t, p.r, p.image, node.NS, fmt.Sprintf("n%d", len(p.network.Nodes)), v, p.svc)
		p.c.machines, p.c.vms = append(p.c.machines, m), append(p.c.vms, v)
		t.Logf("booted %s (VM %d, %s) as %s", n.Name, v.id, v.addr, m.Name)
	}
	return nil
}

// index is the proof's machine of VM id, -1 when none.
func (c *machineCluster) index(id int64) int {
	return slices.IndexFunc(c.vms, func(v vm) bool { return v.id == id })
}

// shrinkTo waits until k8sapi lists count control-plane VMs and has
// deleted the others, powers each deleted VM's machine off, forgets its
// Node, and sees count voting members, every one healthy.
func (p *provenCluster) shrinkTo(t *testing.T, count int) {
	t.Helper()
	var gone []int
	eventually(t, p.r, fmt.Sprintf("%d control-plane VMs, the others deleted by k8sapi", count), []string{"stack"}, 10*time.Minute,
		func(ctx context.Context) (string, error) {
			var err error
			gone, err = p.deletedMachines(ctx, t, count)
			return fmt.Sprintf("machines %v left", gone), err
		})
	for _, i := range slices.Backward(gone) {
		p.powerOffRemoved(t, i)
	}
	writePlatformHosts(t, p.st, p.svc.resolverHosts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := p.c.votingMembers(ctx, count); err != nil {
		fatalf(t, "etcd after the shrink: %v", err)
	} else {
		t.Logf("etcd after the shrink: %s", out)
	}
	eventually(t, p.r, "every etcd member healthy", nil, 2*time.Minute, p.c.etcdHealthy)
}

// deletedMachines: the API lists count control-plane VMs, and every
// machine of another VM has its VM deleted; it returns those machines'
// indexes, in order.
func (p *provenCluster) deletedMachines(ctx context.Context, t *testing.T, count int) ([]int, error) {
	cv, err := getCluster(p.st, p.cl.ClusterID)
	if err != nil {
		return nil, err
	}
	if len(cv.ControlPlaneVMIDs) != count {
		return nil, fmt.Errorf("control-plane VMs %v", cv.ControlPlaneVMIDs)
	}
	var gone []int
	for i, v := range p.c.vms {
		if slices.Contains(cv.ControlPlaneVMIDs, v.id) {
			continue
		}
		if deleted, err := vmDeleted(ctx, t, p.st, v.id); err != nil || !deleted {
			return nil, fmt.Errorf("VM %d not deleted yet (%v)", v.id, err)
		}
		gone = append(gone, i)
	}
	return gone, nil
}

// powerOffRemoved powers machine i off as the platform would once k8sapi
// deleted its VM (gracefully, so its drain runs: the node drains itself
// and deletes its own Node), checks the drain did, frees its address and
// drops it from the proof's machines; it answers the machine, stopped.
// A drain that failed is an error of the proof, and the Node is deleted
// for it (--ignore-not-found) so the checks after it still judge the rest.
func (p *provenCluster) powerOffRemoved(t *testing.T, i int) *harness.Machine {
	t.Helper()
	m := p.c.machines[i]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := p.c.nodeNamed(ctx, p.c.vms[i].addr.Addr().String())
	if err != nil {
		fatalf(t, "%s's Node: %v", m.Name, err)
	}
	t.Logf("powering off %s (VM %d, removed by k8sapi): %s", m.Name, p.c.vms[i].id, m.Stop(harness.PowerOffGrace).Round(time.Millisecond))
	if err := p.network.Unplug(m.NS); err != nil {
		fatal(t, err)
	}
	p.checkDrain(t, m)
	if out, err := p.c.kubectl(ctx, "delete", "node", name, "--ignore-not-found"); err != nil {
		fatalf(t, "deleting the removed Node: %v %s", err, out)
	}
	p.c.machines, p.c.vms = slices.Delete(p.c.machines, i, i+1), slices.Delete(p.c.vms, i, i+1)
	return m
}

// votingMembers: etcd lists exactly count members, none a learner.
func (c *machineCluster) votingMembers(ctx context.Context, count int) (string, error) {
	voters, err := c.etcdVoting(ctx)
	if err != nil {
		return "", err
	}
	if len(voters) != count {
		return "", fmt.Errorf("voting members %v, want %d", voters, count)
	}
	return strings.Join(voters, ", "), nil
}

// readyCount: count Nodes of the proof's machines are Ready, read in one
// list (a kubectl call per machine outran the attempt's deadline on a
// loaded machine, and the Nodes it did not read counted as not Ready).
func (c *machineCluster) readyCount(ctx context.Context, count int) (string, error) {
	var nodes kubeList
	if err := c.kubectlJSON(ctx, &nodes, "get", "nodes"); err != nil {
		return "", err
	}
	var ready []string
	for j, n := range nodes.Items {
		status, _ := conditionSince(j, nodes, "Ready")
		for _, a := range n.Status.Addresses {
			if status == "True" && c.hasAddress(a.Address) {
				ready = append(ready, n.Metadata.Name)
				break
			}
		}
	}
	if len(ready) < count {
		return "", fmt.Errorf("%d of %d Ready: %v", len(ready), count, ready)
	}
	return strings.Join(ready, ", "), nil
}

// nodeNamed is the name of the Node with the internal address addr.
func (c *machineCluster) nodeNamed(ctx context.Context, addr string) (string, error) {
	var nodes kubeList
	if err := c.kubectlJSON(ctx, &nodes, "get", "nodes"); err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Address == addr {
				return n.Metadata.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no Node has the address %s", addr)
}

// hasAddress says whether one of the proof's machines has addr.
func (c *machineCluster) hasAddress(addr string) bool {
	return slices.ContainsFunc(c.vms, func(v vm) bool { return v.addr.Addr().String() == addr })
}
