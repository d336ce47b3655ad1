package faultinjection

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// upgradeToV136 asks for cluster id's upgrade to v1.36.3, recorded.
func (s *stack) upgradeToV136(id int64) {
	s.t.Helper()
	if r := s.upgrade(id, "", toV136); r.Status != http.StatusAccepted {
		s.t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
}

// addonsAsk is one control-plane VM's ask of the addons route, as its
// exk8s-upgrade-addons.timer asks.
func (s *stack) addonsAsk(vm int64) (stacktest.Response, nodebootstrap.AddonsAnswer) {
	s.t.Helper()
	imds, access := s.VMCredentials(vm)
	r := s.VMCall(http.MethodGet, bundle.AddonsPathTemplate, vm, imds, access, "")
	var a nodebootstrap.AddonsAnswer
	if r.Status == http.StatusOK {
		r.JSON(s.t, &a)
	}
	return r, a
}

// addonsReport is vm's report of the addons at version: failure "" once
// applied.
func (s *stack) addonsReport(vm int64, version, failure string) stacktest.Response {
	s.t.Helper()
	imds, access := s.VMCredentials(vm)
	body := `{"kubernetes_version":"` + version + `","failure":"` + failure + `"}`
	return s.VMCall(http.MethodPost, bundle.AddonsPathTemplate, vm, imds, access, body)
}

// answered are the live control-plane VMs the addons route answers (200).
func (s *stack) answered() (vms []int64, answers []nodebootstrap.AddonsAnswer) {
	s.t.Helper()
	for _, vm := range s.liveControlPlaneVMs() {
		r, a := s.addonsAsk(vm)
		switch r.Status {
		case http.StatusOK:
			vms, answers = append(vms, vm), append(answers, a)
		case http.StatusNoContent:
		default:
			s.t.Fatalf("addons ask of vm %d = %d %s", vm, r.Status, r.Body)
		}
	}
	return vms, answers
}

// applyAddons plays the addons' node: each VM answered reports the
// answered version, with failure ("" applied).
func (s *stack) applyAddons(failure string) {
	s.t.Helper()
	vms, answers := s.answered()
	for i, vm := range vms {
		if r := s.addonsReport(vm, answers[i].KubernetesVersion, failure); r.Status != http.StatusOK {
			s.t.Fatalf("addons report of vm %d = %d %s", vm, r.Status, r.Body)
		}
	}
}

func (s *stack) liveControlPlaneVMs() []int64 {
	s.t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT vm_id FROM kube_nodes WHERE role = 'control-plane'
		AND vm_id IS NOT NULL AND NOT retiring ORDER BY ordinal`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var vm int64
		if err := rows.Scan(&vm); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, vm)
	}
	return out
}

// untilAddons drives the upgrade, the world answering but for the addons,
// until its addons step chose a node (at most 30 runs); it returns the
// chosen node's name and VM.
func (s *stack) untilAddons() (string, int64) {
	s.t.Helper()
	for range 30 {
		s.upgradeRun()
		var node string
		var vm int64
		err := s.pool.QueryRow(context.Background(), `SELECT u.addons_node, coalesce(n.vm_id, 0) FROM cluster_upgrades u
			LEFT JOIN kube_nodes n ON n.node_name = u.addons_node ORDER BY u.id DESC LIMIT 1`).Scan(&node, &vm)
		if err != nil {
			s.t.Fatal(err)
		}
		if node != "" {
			return node, vm
		}
		if state, reason, _ := s.upgradeState(); state != "upgrading" {
			s.t.Fatalf("upgrade %s before its addons step: %s", state, reason)
		}
		s.worldButAddons()
	}
	s.t.Fatal("the upgrade never reached its addons step")
	return "", 0
}

// Once every API server is at v1.36.3 the addons move before any pool
// does: the step chooses the lowest-ordinal ready control-plane node at
// v1.36.3 and records it before any node is answered; that node alone is
// answered kube-proxy and CoreDNS rendered at v1.36.3 (the other nodes
// get 204); no worker is surged while its report is due; its report
// (twice: a lost answer) moves the upgrade on to the pool and to done.
func TestUpgradeMovesTheAddonsBeforeThePools(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	s.AddPool(1, id, stacktest.TwoWorkers)
	s.world()
	s.upgradeToV136(id)
	if vms, _ := s.answered(); len(vms) != 0 {
		t.Fatalf("VMs %v answered addons before the control plane moved", vms)
	}
	node, vm := s.untilAddons()
	var lowest string
	if err := s.pool.QueryRow(context.Background(), `SELECT node_name FROM kube_nodes WHERE role = 'control-plane'
		AND kubernetes_version = 'v1.36.3' AND NOT retiring AND ready_at IS NOT NULL ORDER BY ordinal LIMIT 1`).Scan(&lowest); err != nil {
		t.Fatal(err)
	}
	if node != lowest {
		t.Errorf("the addons' node is %s, want the lowest-ordinal ready node at v1.36.3, %s", node, lowest)
	}
	s.upgradeRun() // a run while the report is due (ten minutes on, within its bound): nothing moves
	s.worldButAddons()
	vms, answers := s.answered()
	if len(vms) != 1 || vms[0] != vm {
		t.Fatalf("answered VMs %v, want the chosen %d alone", vms, vm)
	}
	a := answers[0]
	var names []string
	for _, m := range a.Manifests {
		names = append(names, m.Name+" "+m.Rollout)
	}
	if a.KubernetesVersion != "v1.36.3" || strings.Join(names, ", ") != "kube-proxy.yaml daemonset/kube-proxy, coredns.yaml deployment/coredns" ||
		!strings.Contains(a.Manifests[0].Content, "/kube-proxy:v1.36.3") || !strings.Contains(a.Manifests[1].Content, "/coredns:v1.14.2") {
		t.Fatalf("answer %s %v, want kube-proxy and CoreDNS at v1.36.3", a.KubernetesVersion, names)
	}
	if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker' AND kubernetes_version = 'v1.36.3'`); n != 0 {
		t.Fatalf("%d workers at v1.36.3 before the addons were reported", n)
	}
	if state, _, _ := s.upgradeState(); state != "upgrading" {
		t.Fatalf("upgrade %s while the addons are due", state)
	}
	for _, other := range s.liveControlPlaneVMs() {
		if r := s.addonsReport(other, "v1.36.3", ""); other != vm && r.Status != http.StatusNotFound {
			t.Errorf("a report of vm %d, which was not chosen = %d %s, want 404", other, r.Status, r.Body)
		}
	}
	if r := s.addonsReport(vm, "v1.35.4", ""); r.Status != http.StatusNotFound {
		t.Errorf("a report of another version = %d %s, want 404", r.Status, r.Body)
	}
	for range 2 {
		if r := s.addonsReport(vm, "v1.36.3", ""); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"applied":true`) {
			t.Fatalf("the chosen node's report = %d %s", r.Status, r.Body)
		}
	}
	if vms, _ := s.answered(); len(vms) != 0 {
		t.Errorf("VMs %v still answered once the addons were reported", vms)
	}
	if state := s.driveUpgrade(); state != "done" {
		_, reason, _ := s.upgradeState()
		t.Fatalf("upgrade %s: %s", state, reason)
	}
	if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker' AND kubernetes_version = 'v1.36.3' AND NOT retiring`); n != 2 {
		t.Errorf("%d workers at v1.36.3 after it, want the pool's 2", n)
	}
	if n := s.count(`SELECT count(*) FROM cluster_upgrades WHERE addons_version = 'v1.36.3' AND addons_reported_at IS NOT NULL`); n != 1 {
		t.Errorf("the addons at v1.36.3 are not recorded applied")
	}
	if n := s.count(`SELECT count(*) FROM audit_events WHERE action = 'cluster.upgrade_addons_report'`); n < 3 {
		t.Errorf("%d addons reports in the trail, want every one", n)
	}
	s.assertSettled()
}

// A failed apply pauses the upgrade with the node's reason, naming it; no
// worker moves. A resume asks again (the step chooses its node anew), and
// the report of the apply moves it on to done.
func TestAFailedAddonsApplyPausesNamingTheNode(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	s.upgradeToV136(id)
	node, _ := s.untilAddons()
	s.applyAddons("waiting for deployment/coredns (at most 300s): timed out")
	s.upgradeRun()
	state, reason, paused := s.upgradeState()
	if state != "paused" || paused != node || !strings.Contains(reason, "gate addons: "+node) || !strings.Contains(reason, "deployment/coredns") {
		t.Fatalf("upgrade %s at %q: %s; want paused at %s with its reason", state, paused, reason, node)
	}
	if vms, _ := s.answered(); len(vms) != 0 {
		t.Errorf("VMs %v answered addons while the upgrade is paused", vms)
	}
	if r := s.upgrade(id, "/resume", ""); r.Status != http.StatusAccepted {
		t.Fatalf("resume = %d %s", r.Status, r.Body)
	}
	if again, _ := s.untilAddons(); again != node {
		t.Errorf("resumed, the step chose %s, want %s again (still the lowest-ordinal ready node)", again, node)
	}
	if state := s.driveUpgrade(); state != "done" {
		_, reason, _ := s.upgradeState()
		t.Fatalf("upgrade %s: %s", state, reason)
	}
}

// A chosen node that never reports pauses the upgrade once the step's
// bound has passed, naming the node; before it, the upgrade waits.
func TestAddonsNotReportedInTimePause(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	s.upgradeToV136(id)
	node, _ := s.untilAddons()
	s.upgradeRun() // ten minutes on: within the bound
	if state, reason, _ := s.upgradeState(); state != "upgrading" {
		t.Fatalf("upgrade %s within the bound: %s", state, reason)
	}
	s.reconciles += int(bundle.AddonsReportWithin / (10 * time.Minute))
	s.upgradeRun()
	state, reason, paused := s.upgradeState()
	if state != "paused" || paused != node || !strings.Contains(reason, node+" did not report the addons at v1.36.3 applied within") {
		t.Fatalf("upgrade %s at %q: %s; want paused at %s for no report", state, paused, reason, node)
	}
}

// A reconciler run cut off in the addons step (at the record of its node:
// the database refuses the reconciler's write) leaves the node unchosen
// and no VM answered; the next runs choose it once, and the upgrade ends
// done with the addons applied once chosen.
func TestUpgradeCutOffAtTheAddonsStepIsFinished(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	s.upgradeToV136(id)
	ctx := context.Background()
	// The cut-off: the reconciler may not record the addons' node.
	if _, err := s.pool.Exec(ctx, `REVOKE UPDATE (addons_node) ON cluster_upgrades FROM k8sapi_reconciler`); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		s.reconciles++
		r := s.reconcilerAt(time.Duration(s.reconciles) * 10 * time.Minute)
		r.ReplaceWithin = 24 * time.Hour
		_, _ = r.Run(ctx) // the addons step's write fails: retried
		s.worldButAddons()
		if s.count(`SELECT count(*) FROM kube_clusters WHERE kubernetes_version = 'v1.36.3'`) == 1 {
			break
		}
	}
	s.upgradeRun() // the step's write refused once more
	if n := s.count(`SELECT count(*) FROM cluster_upgrades WHERE addons_node <> ''`); n != 0 {
		t.Fatalf("a node was recorded through the cut-off")
	}
	if vms, _ := s.answered(); len(vms) != 0 {
		t.Fatalf("VMs %v answered addons with no node recorded", vms)
	}
	if state, reason, _ := s.upgradeState(); state != "upgrading" {
		t.Fatalf("upgrade %s after the cut-off: %s", state, reason)
	}
	if _, err := s.pool.Exec(ctx, `GRANT UPDATE (addons_node) ON cluster_upgrades TO k8sapi_reconciler`); err != nil {
		t.Fatal(err)
	}
	if state := s.driveUpgrade(); state != "done" {
		_, reason, _ := s.upgradeState()
		t.Fatalf("upgrade %s: %s", state, reason)
	}
	if n := s.count(`SELECT count(*) FROM cluster_upgrades WHERE addons_version = 'v1.36.3'`); n != 1 {
		t.Errorf("the addons at v1.36.3 are not recorded applied")
	}
	s.assertSettled()
}
