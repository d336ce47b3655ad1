package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The rolling upgrade on booted nodes (issue 38): the cluster founded at
// nodeVersions.Kubernetes, its three control-plane nodes and the pool's
// two workers, moved to upgradeRelease.Kubernetes by POST
// /clusters/{id}/upgrade while the API probe and the workload probe
// (pool-web's two replicas behind their Service, with a
// PodDisruptionBudget) count what fails. k8sapi replaces each
// control-plane node by one at the new release, then surges the pool; the
// proof plays the platform only: it boots each VM k8sapi creates and
// powers off each VM k8sapi deletes (a worker drains itself as it goes).
// Nothing else is told to k8sapi.

// upgradeEnv turns the upgrade step on when "1" (make e2e-upgrade): it
// has not held on booted nodes end to end yet, so the default run leaves
// it out.
const upgradeEnv = "E2E_UPGRADE"

// poolWebBudget keeps one of pool-web's two replicas up through every
// drain: an eviction that would leave none is refused until the evicted
// replica runs again elsewhere.
const poolWebBudget = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: pool-web
  namespace: default
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: pool-web}
`

// upgradeDrainSeconds is the upgrade's bound on each retired worker's
// drain (drain_timeout_seconds): told to the workers it retires in their
// health answers, inside the power-off grace the proof gives a worker.
const upgradeDrainSeconds = 90

// upgradeView is GET /clusters/{id}/upgrade as the proof reads it.
type upgradeView struct {
	State       string `json:"state"`
	StateReason string `json:"state_reason"`
	PausedNode  string `json:"paused_node"`
	PassTo      string `json:"pass_version"`
}

// checkUpgrade upgrades the cluster and its pool when upgradeEnv asks
// for it and says what held; it answers the pool's workers after it.
func (p *provenCluster) checkUpgrade(t *testing.T, workers []poolWorker) ([]poolWorker, string) {
	t.Helper()
	if os.Getenv(upgradeEnv) != "1" {
		return workers, ""
	}
	return p.upgrade(t, workers)
}

// upgrade moves the cluster and its pool to upgradeRelease under the
// probes, checks what holds after it, and answers the pool's workers and
// the summary line (make conformance's upgrade mode runs it too).
func (p *provenCluster) upgrade(t *testing.T, workers []poolWorker) ([]poolWorker, string) {
	t.Helper()
	from, to := nodeVersions.Kubernetes, upgradeRelease.Kubernetes
	p.useOperatorKubeconfig(t)
	p.applyInCluster(t, "/root/pool-web-budget.yaml", poolWebBudget)
	p.checkUpgradePlan(t, len(workers))
	api := p.startAPIProbe(t)
	web := p.c.startWorkloadProbe(t)
	start := time.Now()
	body := fmt.Sprintf(`{"kubernetes_version":%q,"drain_timeout_seconds":%d}`, to, upgradeDrainSeconds)
	apiCall(t, p.st, http.MethodPost, fmt.Sprintf("/clusters/%d/upgrade", p.cl.ClusterID), body, http.StatusAccepted)
	u := &upgradeTender{p: p, t: t, web: web, workers: workers}
	eventually(t, p.r, "the upgrade to "+to+" done, every VM k8sapi made booted and every one it deleted powered off",
		append(p.c.consoles(), "stack"), 40*time.Minute, u.tend)
	took := time.Since(start)
	p.tl.took(fmt.Sprintf("upgrade %s → %s of 3 control-plane nodes and %d workers", from, to, len(workers)), took)
	asked, failed := api.finish()
	probes, missed := web.finish()
	summary := fmt.Sprintf("upgraded %s → %s: %d/%d control-plane and %d/%d workers in %.0f s; API probe %d/%d failed, workload probe %d/%d failed",
		from, to, u.movedControlPlane, len(p.c.machines), u.movedWorkers, len(workers), took.Seconds(), len(failed), asked, len(missed), probes)
	t.Log(summary)
	for _, f := range append(failed, missed...) {
		t.Log("  " + f)
	}
	p.checkUpgraded(t, u.workers)
	p.deleteInCluster(t, "poddisruptionbudget", "pool-web") // the scale down and the delete drain to none
	return u.workers, summary
}

// applyInCluster writes manifest into the operator's machine and applies it.
func (p *provenCluster) applyInCluster(t *testing.T, path, manifest string) {
	t.Helper()
	if err := p.c.writeInMachine(0, path, []byte(manifest)); err != nil {
		fatal(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := p.c.kubectl(ctx, "apply", "-f", path); err != nil {
		fatalf(t, "applying %s: %v %s", path, err, out)
	}
}

// deleteInCluster deletes one object of the default namespace.
func (p *provenCluster) deleteInCluster(t *testing.T, kind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := p.c.kubectl(ctx, "delete", kind, name, "--ignore-not-found"); err != nil {
		fatalf(t, "deleting %s %s: %v %s", kind, name, err, out)
	}
}

// checkUpgradePlan asks for the plan first (dry_run: nothing recorded):
// one pass, every gate passed or judged while it runs, the three
// control-plane nodes in order and the pool's workers.
func (p *provenCluster) checkUpgradePlan(t *testing.T, workers int) {
	t.Helper()
	var plan struct {
		Plan struct {
			Passes []struct {
				From string `json:"from_version"`
				To   string `json:"to_version"`
			} `json:"passes"`
			Gates []struct {
				Name    string `json:"name"`
				Passed  bool   `json:"passed"`
				Pending bool   `json:"pending"`
				Detail  string `json:"detail"`
			} `json:"gates"`
			ControlPlane []struct{ Name string } `json:"control_plane"`
			Pools        []struct {
				Nodes []struct{ Name string } `json:"nodes"`
			} `json:"node_pools"`
		} `json:"plan"`
	}
	body := `{"kubernetes_version":"` + upgradeRelease.Kubernetes + `","dry_run":true}`
	decode(t, apiCall(t, p.st, http.MethodPost, fmt.Sprintf("/clusters/%d/upgrade", p.cl.ClusterID), body, http.StatusOK), &plan)
	pl := plan.Plan
	if len(pl.Passes) != 1 || pl.Passes[0].From != nodeVersions.Kubernetes || pl.Passes[0].To != upgradeRelease.Kubernetes {
		fatalf(t, "the upgrade's passes %+v, want one %s → %s", pl.Passes, nodeVersions.Kubernetes, upgradeRelease.Kubernetes)
	}
	for _, g := range pl.Gates {
		if !g.Passed && !g.Pending {
			fatalf(t, "the upgrade's gate %s fails on the proof's cluster: %s", g.Name, g.Detail)
		}
	}
	if len(pl.ControlPlane) != len(p.c.machines) || len(pl.Pools) != 1 || len(pl.Pools[0].Nodes) != workers {
		fatalf(t, "the upgrade's plan moves control plane %+v and pools %+v, want %d and one of %d", pl.ControlPlane, pl.Pools, len(p.c.machines), workers)
	}
	t.Logf("the upgrade's plan: %d gates passed or judged as it runs; control plane in the order %v", len(pl.Gates), pl.ControlPlane)
}

// upgradeTender plays the platform while the upgrade runs.
type upgradeTender struct {
	p                               *provenCluster
	t                               *testing.T
	web                             *workloadProbe
	workers                         []poolWorker
	movedControlPlane, movedWorkers int
}

// tend boots what k8sapi made, powers off what it deleted, and is done
// once the upgrade is and the proof's machines are exactly the cluster's
// again. A paused upgrade fails at once with its reason.
func (u *upgradeTender) tend(context.Context) (string, error) {
	up, err := u.p.upgradeState()
	if err != nil {
		return "", err
	}
	if up.State == "paused" || up.State == "aborted" {
		fatalf(u.t, "the upgrade %s at node %q: %s", up.State, up.PausedNode, up.StateReason)
	}
	// Retired first: the platform hands a deleted VM's address to the next
	// VM it makes, so a machine still up at an address would share it with
	// the new one (seen: etcd and API timeouts on the whole node network).
	retired, err := u.retireDeleted()
	if err != nil {
		return "", err
	}
	if err := u.p.bootNewControlPlaneVMs(u.t); err != nil {
		return "", err
	}
	if err := u.bootNewWorkers(); err != nil {
		return "", err
	}
	if up.State != "done" || retired > 0 {
		return "", fmt.Errorf("upgrade %s (pass %s) %s; machines retired now %d", up.State, up.PassTo, up.StateReason, retired)
	}
	return fmt.Sprintf("%d control-plane and %d workers moved", u.movedControlPlane, u.movedWorkers), nil
}

// upgradeState reads the cluster's upgrade.
func (p *provenCluster) upgradeState() (upgradeView, error) {
	var v upgradeView
	code, raw, err := apiAnswer(p.st, http.MethodGet, fmt.Sprintf("/clusters/%d/upgrade", p.cl.ClusterID), "")
	if err != nil || code != http.StatusOK {
		return v, fmt.Errorf("GET upgrade: %d %s (%v)", code, raw, err)
	}
	return v, json.Unmarshal(raw, &v)
}

// bootNewWorkers boots each pool VM with an address that is not one of
// the proof's workers yet.
func (u *upgradeTender) bootNewWorkers() error {
	v, _, err := u.p.getPool(u.t)
	if err != nil {
		return err
	}
	var fresh []poolWorker
	for _, n := range v.Nodes {
		known := slices.ContainsFunc(u.workers, func(w poolWorker) bool { return w.v.id == n.VMID })
		if n.VMID != 0 && n.IPv4 != "" && !known {
			fresh = append(fresh, poolWorker{v: loadVMs(u.t, u.p.st, []int64{n.VMID})[0], name: n.Name})
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	u.p.bootWorkers(u.t, fresh)
	u.workers = append(u.workers, fresh...)
	return nil
}

// retireDeleted powers off every machine whose VM k8sapi deleted and
// answers how many it found.
func (u *upgradeTender) retireDeleted() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for i := len(u.workers) - 1; i >= 0; i-- {
		if deleted, err := vmDeleted(ctx, u.t, u.p.st, u.workers[i].v.id); err != nil || !deleted {
			continue
		}
		u.retireWorkerMachine(u.workers[i])
		u.workers = slices.Delete(u.workers, i, i+1)
		u.movedWorkers++
		n++
	}
	for i := len(u.p.c.vms) - 1; i >= 0; i-- {
		if deleted, err := vmDeleted(ctx, u.t, u.p.st, u.p.c.vms[i].id); err != nil || !deleted {
			continue
		}
		u.retireControlPlaneMachine(i)
		u.movedControlPlane++
		n++
	}
	return n, nil
}

// retireWorkerMachine powers a retired worker off gracefully: its drain
// runs (cordon, evictions under pool-web's budget, its Node deleted).
func (u *upgradeTender) retireWorkerMachine(w poolWorker) {
	u.t.Logf("powering %s (VM %d, retired by the upgrade) off: %s", w.m.Name, w.v.id, w.m.Stop(harness.PowerOffGrace).Round(time.Millisecond))
	u.p.checkDrain(u.t, w.m)
	u.p.checkDrainBound(u.t, w.m, fmt.Sprintf("for at most %d s (k8sapi's", upgradeDrainSeconds))
	if err := u.p.network.Unplug(w.m.NS); err != nil {
		fatal(u.t, err)
	}
}

// retireControlPlaneMachine powers off control-plane machine i, whose VM
// the upgrade's replacement deleted. The proof's operator works from
// machine 0: when that is the one going, it moves to a machine that stays
// first, and the workload probe with it.
func (u *upgradeTender) retireControlPlaneMachine(i int) {
	c := u.p.c
	if i == 0 {
		next := slices.IndexFunc(c.vms[1:], func(v vm) bool { return !u.deleted(v) })
		if next < 0 {
			fatalf(u.t, "no control-plane machine stays to work from")
		}
		u.p.moveOperatorTo(u.t, next+1)
		u.web.moveTo(c.initial())
		i = next + 1 // the retiring machine took its place
	}
	m := u.p.powerOffRemoved(u.t, i)
	u.p.checkDrainBound(u.t, m, fmt.Sprintf("for at most %d s (k8sapi's", upgradeDrainSeconds))
}

// deleted says whether the platform deleted v (an error counts as not).
func (u *upgradeTender) deleted(v vm) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gone, err := vmDeleted(ctx, u.t, u.p.st, v.id)
	return err == nil && gone
}

// moveOperatorTo makes machine i the operator's (index 0), with an admin
// kubeconfig issued now.
func (p *provenCluster) moveOperatorTo(t *testing.T, i int) {
	t.Helper()
	c := p.c
	c.machines[0], c.machines[i] = c.machines[i], c.machines[0]
	c.vms[0], c.vms[i] = c.vms[i], c.vms[0]
	p.useOperatorKubeconfig(t)
	t.Logf("the operator works from %s now", c.initial().Name)
}

// checkUpgraded: every Node runs the new release's kubelet, the API
// server answers with its version, k8sapi shows every node at it, etcd
// has three voting members, and pool-web runs on both workers.
func (p *provenCluster) checkUpgraded(t *testing.T, workers []poolWorker) {
	t.Helper()
	want := upgradeRelease.Kubernetes
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var nodes kubeList
	if err := p.c.kubectlJSON(ctx, &nodes, "get", "nodes"); err != nil {
		fatal(t, err)
	}
	for _, n := range nodes.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != want {
			errorf(t, "Node %s runs kubelet %s after the upgrade, want %s", n.Metadata.Name, v, want)
		}
	}
	if len(nodes.Items) != len(p.c.machines)+len(workers) {
		errorf(t, "%d Nodes after the upgrade, want %d control-plane and %d workers", len(nodes.Items), len(p.c.machines), len(workers))
	}
	if out, err := p.c.kubectl(ctx, "get", "--raw", "/version"); err != nil || !strings.Contains(string(out), `"gitVersion": "`+want+`"`) {
		errorf(t, "the API server's /version after the upgrade: %v %s", err, out)
	}
	p.checkNodeVersionsRecorded(t, want)
	p.checkAddonsMoved(t)
	if out, err := p.c.votingMembers(ctx, len(p.c.machines)); err != nil {
		errorf(t, "etcd after the upgrade: %v", err)
	} else {
		t.Logf("etcd after the upgrade: %s", out)
	}
	eventually(t, p.r, "pool-web: one replica on each upgraded worker", p.c.consoles(), 5*time.Minute,
		func(ctx context.Context) (string, error) { return p.c.poolWebOn(ctx, 2) })
}

// checkNodeVersionsRecorded: k8sapi shows the cluster and every one of
// its nodes at version.
func (p *provenCluster) checkNodeVersionsRecorded(t *testing.T, version string) {
	t.Helper()
	var cv struct {
		KubernetesVersion string `json:"kubernetes_version"`
		Nodes             []struct {
			Name              string `json:"name"`
			KubernetesVersion string `json:"kubernetes_version"`
		} `json:"nodes"`
	}
	decode(t, apiCall(t, p.st, http.MethodGet, fmt.Sprintf("/clusters/%d", p.cl.ClusterID), "", http.StatusOK), &cv)
	if cv.KubernetesVersion != version {
		errorf(t, "the cluster is at %s after the upgrade, want %s", cv.KubernetesVersion, version)
	}
	for _, n := range cv.Nodes {
		if n.KubernetesVersion != version {
			errorf(t, "k8sapi shows %s at %s after the upgrade, want %s", n.Name, n.KubernetesVersion, version)
		}
	}
}

// movedAddons are the addons an upgrade moves to its release's images:
// kind/name in kube-system, and the image repository and tag it must run.
var movedAddons = []struct{ object, image string }{
	{"daemonset/kube-proxy", "/kube-proxy:" + upgradeRelease.Kubernetes},
	{"deployment/coredns", "/coredns/coredns:" + upgradeRelease.CoreDNS},
}

// checkAddonsMoved: kube-proxy and CoreDNS run the new release's images
// (the upgrade's addons step, applied by one control-plane node).
func (p *provenCluster) checkAddonsMoved(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, a := range movedAddons {
		out, err := p.c.kubectl(ctx, "-n", "kube-system", "get", a.object, "-o", "jsonpath={.spec.template.spec.containers[*].image}")
		if err != nil || !strings.Contains(string(out), a.image) {
			errorf(t, "%s after the upgrade runs %q (%v), want %s", a.object, out, err, a.image)
		}
	}
}
