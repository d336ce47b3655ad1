package faultinjection

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/jackc/pgx/v5"
)

const toV136 = `{"kubernetes_version":"v1.36.3"}`

func (s *stack) upgradeURL(id int64, action string) string {
	return s.APIURL + "/clusters/" + strconv.FormatInt(id, 10) + "/upgrade" + action
}

// upgrade asks for cluster id's upgrade (action "" with body, or
// "/resume", "/abort").
func (s *stack) upgrade(id int64, action, body string) stacktest.Response {
	return stacktest.Do(s.t, http.MethodPost, s.upgradeURL(id, action), body, s.Bearer(1))
}

// upgradable founds a three-node cluster whose nodes reported ready, with
// the published-digest fallback allowed (v1.36.3's files are not pinned
// in the stack's artifacts).
func (s *stack) upgradable() (int64, []int64) {
	s.t.Helper()
	s.clustersFn.Settings.Artifacts.DigestFallback = true
	res := s.Found(1, stacktest.ThreeNodes)
	s.markReady(res.ControlPlaneVMIDs...)
	return res.ClusterID, res.ControlPlaneVMIDs
}

// world does what the nodes would: the node asked for a snapshot uploads
// it (its report checked), every node a replacement made reports ready
// once it has a VM, and the node an upgrade's addons step chose applies
// them and reports (addons.go: through the route, as its timer does).
func (s *stack) world() {
	s.t.Helper()
	s.worldButAddons()
	s.applyAddons("")
}

// worldButAddons is world without the addons' node.
func (s *stack) worldButAddons() {
	s.t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE etcd_snapshots SET state = 'uploaded', size_bytes = 4096, sha256 = repeat('ab', 32), finished_at = now() WHERE state = 'pending'`,
		`UPDATE kube_nodes SET phase = 'ready', ready_at = now() WHERE (replacement_id IS NOT NULL OR role = 'worker')
			AND vm_id IS NOT NULL AND ready_at IS NULL`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			s.t.Fatal(err)
		}
	}
}

// upgradeState is the newest upgrade's state, reason and paused node.
func (s *stack) upgradeState() (state, reason, node string) {
	s.t.Helper()
	if err := s.pool.QueryRow(context.Background(), `SELECT state, state_reason, paused_node FROM cluster_upgrades
		ORDER BY id DESC LIMIT 1`).Scan(&state, &reason, &node); err != nil {
		s.t.Fatal(err)
	}
	return state, reason, node
}

// driveUpgrade runs the reconciler, the world answering between runs,
// until the upgrade is settled or paused (at most 30 runs).
func (s *stack) driveUpgrade() string {
	s.t.Helper()
	for range 30 {
		s.upgradeRun()
		if state, _, _ := s.upgradeState(); state != "upgrading" && state != "aborting" {
			return state
		}
		s.world()
	}
	state, reason, _ := s.upgradeState()
	s.t.Fatalf("the upgrade is still %s after 30 runs: %s", state, reason)
	return ""
}

// upgradeRun is one reconciler run, later than the last, whose
// replacements wait a day for their new nodes: an upgrade takes many runs,
// each ten minutes on (the world answers at once between them).
func (s *stack) upgradeRun() {
	s.t.Helper()
	s.reconciles++
	r := s.reconcilerAt(time.Duration(s.reconciles) * 10 * time.Minute)
	r.ReplaceWithin = 24 * time.Hour
	if _, err := r.Run(context.Background()); err != nil {
		s.t.Fatalf("reconciler: %v", err)
	}
}

// versions are the control-plane nodes' versions and how many retire.
func (s *stack) versions() (versions map[string]int, retiring int, cluster string) {
	s.t.Helper()
	ctx := context.Background()
	versions = map[string]int{}
	rows, err := s.pool.Query(ctx, `SELECT kubernetes_version, retiring FROM kube_nodes WHERE role = 'control-plane'`)
	if err != nil {
		s.t.Fatal(err)
	}
	for rows.Next() {
		var v string
		var r bool
		if err := rows.Scan(&v, &r); err != nil {
			s.t.Fatal(err)
		}
		versions[v]++
		if r {
			retiring++
		}
	}
	if err := s.pool.QueryRow(ctx, `SELECT kubernetes_version FROM kube_clusters`).Scan(&cluster); err != nil {
		s.t.Fatal(err)
	}
	return versions, retiring, cluster
}

// The plan comes first: a dry run answers the chain, the gates and the
// order of the nodes and records nothing. The upgrade then takes its
// snapshot (verified) before the first node moves, replaces each
// control-plane node by one at v1.36.3, one at a time, and moves the
// cluster's version once every API server is at it; a second upgrade
// meanwhile is refused.
func TestUpgradeMovesTheControlPlaneOneNodeAtATime(t *testing.T) {
	s := newStack(t)
	id, vms := s.upgradable()
	var dry apitypes.UpgradeAnswer
	r := s.upgrade(id, "", `{"kubernetes_version":"v1.36.3","dry_run":true}`)
	r.JSON(t, &dry)
	if r.Status != http.StatusOK || dry.Upgrade != nil || len(dry.Plan.Passes) != 1 || dry.Plan.Passes[0].To != "v1.36.3" ||
		len(dry.Plan.ControlPlane) != 3 || dry.Plan.ControlPlane[0].VMID != vms[0] {
		t.Fatalf("dry run = %d %s", r.Status, r.Body)
	}
	for _, g := range dry.Plan.Gates {
		if !g.Passed && !g.Pending {
			t.Errorf("gate %s failed on a ready cluster: %s", g.Name, g.Detail)
		}
	}
	if n := s.count(`SELECT count(*) FROM cluster_upgrades`); n != 0 {
		t.Fatalf("a dry run recorded %d upgrades", n)
	}
	if r := s.upgrade(id, "", toV136); r.Status != http.StatusAccepted || r.Header.Get("Location") != "/clusters/"+itoa(id)+"/upgrade" {
		t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
	if r := s.upgrade(id, "", toV136); r.Status != http.StatusConflict || r.ErrorCode(t) != "upgrade_in_progress" {
		t.Errorf("a second upgrade = %d %s, want 409 upgrade_in_progress", r.Status, r.Body)
	}
	s.upgradeRun()
	if n := s.count(`SELECT count(*) FROM node_replacements`); n != 0 {
		t.Fatalf("%d replacements began before the snapshot was uploaded", n)
	}
	if state := s.driveUpgrade(); state != "done" {
		_, reason, _ := s.upgradeState()
		t.Fatalf("upgrade %s: %s", state, reason)
	}
	versions, retiring, cluster := s.versions()
	if versions["v1.36.3"] != 3 || len(versions) != 1 || retiring != 0 || cluster != "v1.36.3" {
		t.Errorf("control plane %v (%d retiring), cluster at %s; want 3 nodes at v1.36.3 and the cluster at it", versions, retiring, cluster)
	}
	if n := s.count(`SELECT count(*) FROM node_replacements WHERE state = 'done'`); n != 3 {
		t.Errorf("%d replacements done, want one per control-plane node", n)
	}
	if n := s.count(`SELECT count(*) FROM node_replacements r, etcd_snapshots e WHERE r.created_at < e.finished_at`); n != 0 {
		t.Errorf("%d replacements began before the snapshot was verified", n)
	}
	if _, _, created, live := s.counts(); created != 6 || live != 3 {
		t.Errorf("%d VMs created, %d live; want 6 and 3", created, live)
	}
	s.assertSettled()
	var got apitypes.Upgrade
	stacktest.Do(t, http.MethodGet, s.upgradeURL(id, ""), "", s.Bearer(1)).JSON(t, &got)
	if got.State != "done" || got.SnapshotID == nil || got.From != "v1.35.4" || got.To != "v1.36.3" {
		t.Errorf("GET upgrade = %+v", got)
	}
}

func (s *stack) count(q string) int {
	s.t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Each preflight gate refuses with its own code, naming the gate, and
// records nothing; the deprecated-API gate alone may be overridden, and
// the override is in the cluster's trail.
func TestEachUpgradeGateRefusesByName(t *testing.T) {
	s := newStack(t)
	id, vms := s.upgradable()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.pool.Exec(context.Background(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		gate, code   string
		break_, heal string
	}{
		{"nodes_ready", "upgrade_nodes_not_ready", `UPDATE kube_nodes SET phase = 'failed' WHERE vm_id = $1`, `UPDATE kube_nodes SET phase = 'ready' WHERE vm_id = $1`},
		{"etcd_healthy", "upgrade_etcd_unhealthy", `UPDATE kube_nodes SET ready_at = NULL WHERE vm_id = $1`, `UPDATE kube_nodes SET ready_at = now() WHERE vm_id = $1`},
		{"version_skew", "upgrade_version_skew", `UPDATE kube_nodes SET kubernetes_version = 'v1.36.3' WHERE vm_id = $1`, `UPDATE kube_nodes SET kubernetes_version = 'v1.35.4' WHERE vm_id = $1`},
		{"deprecated_apis", "upgrade_deprecated_apis", `UPDATE kube_nodes SET deprecated_apis = jsonb_build_array(jsonb_build_object('group', 'flowcontrol.apiserver.k8s.io', 'version', 'v1beta3',
			'resource', 'flowschemas', 'subresource', '', 'removed_release', '1.36', 'last_seen', now())), deprecated_apis_reported_at = now() WHERE vm_id = $1`,
			`UPDATE kube_nodes SET deprecated_apis = '[]' WHERE vm_id = $1`},
	} {
		exec(c.break_, vms[1])
		r := s.upgrade(id, "", toV136)
		if r.Status != http.StatusConflict || r.ErrorCode(t) != c.code || !strings.Contains(string(r.Body), "gate "+c.gate) {
			t.Errorf("%s broken: %d %s, want 409 %s naming the gate", c.gate, r.Status, r.Body, c.code)
		}
		var dry apitypes.UpgradeAnswer
		s.upgrade(id, "", `{"kubernetes_version":"v1.36.3","dry_run":true}`).JSON(t, &dry)
		if failed := failedGates(dry.Plan); len(failed) != 1 || failed[0] != c.gate {
			t.Errorf("%s broken: the plan's failed gates are %v", c.gate, failed)
		}
		if c.gate == "deprecated_apis" {
			s.overrideRecorded(id)
		}
		exec(c.heal, vms[1])
	}
	for body, want := range map[string]string{`{"kubernetes_version":"v1.35.4"}`: "upgrade_no_path", `{"kubernetes_version":"v1.30.0"}`: "invalid_field",
		`{"kubernetes_version":"v1.36.3","surge":0}`: "invalid_field"} {
		if r := s.upgrade(id, "", body); r.ErrorCode(t) != want {
			t.Errorf("%s = %d %s, want %s", body, r.Status, r.Body, want)
		}
	}
}

func failedGates(p apitypes.UpgradePlan) []string {
	var out []string
	for _, g := range p.Gates {
		if !g.Passed && !g.Pending {
			out = append(out, g.Name)
		}
	}
	return out
}

// overrideRecorded: with allow_deprecated_apis the upgrade begins, says
// so, and the trail records it under its own action.
func (s *stack) overrideRecorded(id int64) {
	s.t.Helper()
	var a apitypes.UpgradeAnswer
	r := s.upgrade(id, "", `{"kubernetes_version":"v1.36.3","allow_deprecated_apis":true}`)
	r.JSON(s.t, &a)
	if r.Status != http.StatusAccepted || a.Upgrade == nil || !a.Upgrade.DeprecatedAPIsOverridden {
		s.t.Fatalf("overridden = %d %s", r.Status, r.Body)
	}
	if n := s.count(`SELECT count(*) FROM audit_events WHERE action = 'cluster.upgrade_deprecated_apis_overridden' AND outcome = 'succeeded'`); n != 1 {
		s.t.Errorf("%d trail events of the override, want 1", n)
	}
	if r := s.upgrade(id, "/abort", ""); r.Status != http.StatusAccepted {
		s.t.Fatalf("abort = %d %s", r.Status, r.Body)
	}
	if state := s.driveUpgrade(); state != "aborted" {
		s.t.Fatalf("the overridden upgrade, aborted before a node moved, is %s", state)
	}
}

// A replacement of the upgrade that fails pauses it with a reason naming
// the node; a resume goes on from there, and an abort before the last
// control-plane node moved brings the moved ones back by replacements at
// the old version: every node at v1.35.4, no VM left over.
func TestAFailedReplacementPausesThenAbortGoesBack(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	if r := s.upgrade(id, "", toV136); r.Status != http.StatusAccepted {
		t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
	for range 30 { // until the first node moved
		s.upgradeRun()
		s.world()
		if s.count(`SELECT count(*) FROM node_replacements WHERE state = 'done'`) == 1 {
			break
		}
	}
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 1})
	if state := s.driveUpgrade(); state != "paused" {
		t.Fatalf("upgrade %s after a failed replacement, want paused", state)
	}
	_, reason, node := s.upgradeState()
	if node == "" || !strings.Contains(reason, node) || !strings.Contains(reason, "failed") {
		t.Errorf("paused at %q: %q; want the node named and what failed", node, reason)
	}
	if r := s.upgrade(id, "/resume", "{}"); r.Status != http.StatusAccepted {
		t.Fatalf("resume = %d %s", r.Status, r.Body)
	}
	if r := s.upgrade(id, "/resume", ""); r.Status != http.StatusConflict || r.ErrorCode(t) != "upgrade_not_paused" {
		t.Errorf("resuming an upgrade that is not paused = %d %s", r.Status, r.Body)
	}
	if r := s.upgrade(id, "/abort", ""); r.Status != http.StatusAccepted {
		t.Fatalf("abort = %d %s", r.Status, r.Body)
	}
	if state := s.driveUpgrade(); state != "aborted" {
		_, reason, _ := s.upgradeState()
		t.Fatalf("abort ended %s: %s", state, reason)
	}
	versions, retiring, cluster := s.versions()
	if versions["v1.35.4"] != 3 || len(versions) != 1 || retiring != 0 || cluster != "v1.35.4" {
		t.Errorf("control plane %v (%d retiring), cluster at %s; want every node back at v1.35.4", versions, retiring, cluster)
	}
	if _, _, _, live := s.counts(); live != 3 {
		t.Errorf("%d VMs live, want 3", live)
	}
	s.assertSettled()
}

// Once every API server is at the target the abort is refused: the way
// back is the pre-upgrade snapshot.
func TestAbortAfterTheControlPlaneMovedIsRefused(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO node_pools (kube_cluster_id, name, count, instance_type, image_id, subnet_id, state)
		VALUES ($1, 'web', 0, 'e2.medium', 1, 1, 'active')`, id); err != nil {
		t.Fatal(err)
	}
	if r := s.upgrade(id, "", toV136); r.Status != http.StatusAccepted {
		t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
	if _, err := s.pool.Exec(context.Background(), `UPDATE cluster_upgrades SET state = 'paused'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET kubernetes_version = 'v1.36.3'`); err != nil {
		t.Fatal(err)
	}
	r := s.upgrade(id, "/abort", "")
	if r.Status != http.StatusConflict || r.ErrorCode(t) != "upgrade_past_abort" || !strings.Contains(string(r.Body), "RESTORE") {
		t.Errorf("abort past the control plane = %d %s", r.Status, r.Body)
	}
}

// An upgrade whose reconciler run is cut off at each remote step of its
// replacements is finished by the next runs: every control-plane node at
// v1.36.3, never a second VM for a node, no VM left over.
func TestUpgradeCutOffAtEachStepIsFinished(t *testing.T) {
	for _, c := range replaceSteps {
		t.Run(c.step, func(t *testing.T) {
			s := newStack(t)
			id, _ := s.upgradable()
			if r := s.upgrade(id, "", toV136); r.Status != http.StatusAccepted {
				t.Fatalf("upgrade = %d %s", r.Status, r.Body)
			}
			s.upgradeRun() // the snapshot asked for
			s.world()
			if c.ready {
				s.upgradeRun() // the first replacement begun, its node made
				s.world()
				s.upgradeRun() // the control-plane name moved off the old node, its TTL waited out
			}
			s.cutOffReconciler(c.gate(s), c.n)
			if state := s.driveUpgrade(); state != "done" {
				_, reason, _ := s.upgradeState()
				t.Fatalf("upgrade %s: %s", state, reason)
			}
			versions, _, _ := s.versions()
			if versions["v1.36.3"] != 3 || len(versions) != 1 {
				t.Errorf("control plane %v, want 3 nodes at v1.36.3", versions)
			}
			if _, _, created, live := s.counts(); created != 6 || live != 3 {
				t.Errorf("%d VMs created, %d live; want 6 and 3", created, live)
			}
			s.assertSettled()
		})
	}
}

// Each pool moves by surge once every API server is at the target: a new
// worker at v1.36.3 is ready before an old one is retired (never fewer
// ready workers than the pool's count), the old ones' VMs are deleted,
// and the pool keeps its count. Every worker reports its health between
// runs: each old one is told the upgrade's drain bound (45) before its VM
// is deleted, after which it has no IMDS session left to ask with (why it
// is told before); a new one is told nothing (its bundle's default).
func TestUpgradeMovesEachPoolBySurge(t *testing.T) {
	s := newStack(t)
	id, _ := s.upgradable()
	pool := s.AddPool(1, id, stacktest.TwoWorkers)
	s.world()
	if r := s.upgrade(id, "", `{"kubernetes_version":"v1.36.3","drain_timeout_seconds":45}`); r.Status != http.StatusAccepted {
		t.Fatalf("upgrade = %d %s", r.Status, r.Body)
	}
	s.refusedMidUpgrade(id)
	told := map[int64]string{}
	for range 40 {
		s.workersReport(told)
		s.upgradeRun()
		if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker' AND NOT retiring AND phase = 'ready'`); n < 2 {
			t.Fatalf("%d ready workers stay, want at least the pool's 2 throughout", n)
		}
		if state, _, _ := s.upgradeState(); state != "upgrading" {
			break
		}
		s.world()
	}
	if state, reason, _ := s.upgradeState(); state != "done" {
		t.Fatalf("upgrade %s: %s", state, reason)
	}
	if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker' AND kubernetes_version = 'v1.36.3' AND NOT retiring`); n != 2 {
		t.Errorf("%d workers at v1.36.3, want the pool's 2", n)
	}
	if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker'`); n != 2 {
		t.Errorf("%d worker rows, want 2", n)
	}
	if n := s.count(`SELECT count FROM node_pools`); n != 2 {
		t.Errorf("the pool's count is %d, want 2", n)
	}
	if _, _, created, live := s.counts(); created != 10 || live != 5 {
		t.Errorf("%d VMs created, %d live; want 10 (3+3 control plane, 2+2 workers) and 5", created, live)
	}
	s.assertSettled()
	for _, n := range pool.Nodes {
		if told[n.VMID] != "45" {
			t.Errorf("old worker %s was told %q before its retirement, want 45", n.Name, told[n.VMID])
		}
		if r := stacktest.Do(t, http.MethodGet, s.SimURL+"/imds/"+itoa(n.VMID)+"/token", "", nil); r.Status == http.StatusOK {
			t.Errorf("retired worker %s still gets an IMDS session", n.Name)
		}
	}
	s.workersReport(told)
	if n := s.count(`SELECT count(*) FROM kube_nodes WHERE role = 'worker'`); len(told) != len(pool.Nodes)+n {
		t.Errorf("%d workers reported, want the %d old and %d new", len(told), len(pool.Nodes), n)
	}
	for vm, got := range told {
		if !slices.ContainsFunc(pool.Nodes, func(n apitypes.WorkerView) bool { return n.VMID == vm }) && got != "" {
			t.Errorf("new worker (vm %d) was told %q, want nothing", vm, got)
		}
	}
}

// workersReport sends a health report from every worker with a VM, and
// keeps in told the drain bound each was answered with (latest first
// kept: an old worker is told until it is gone).
func (s *stack) workersReport(told map[int64]string) {
	s.t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT vm_id FROM kube_nodes WHERE role = 'worker' AND vm_id IS NOT NULL`)
	if err != nil {
		s.t.Fatal(err)
	}
	vms, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		s.t.Fatal(err)
	}
	for _, vm := range vms {
		imds, access := s.VMCredentials(vm)
		r := s.VMCall(http.MethodPost, bundle.WorkerHealthPathTemplate, vm, imds, access, `{"checks":{"kubelet":{"ok":true}}}`)
		if r.Status != http.StatusNoContent {
			s.t.Fatalf("worker vm %d's health report = %d %s", vm, r.Status, r.Body)
		}
		if got := r.Header.Get(bundle.DrainHeader); got != "" || told[vm] == "" {
			told[vm] = got
		}
	}
}

// refusedMidUpgrade: while cluster id's upgrade runs, an operator's pool
// scale and the cluster's deletion are refused by name, and nothing moved.
func (s *stack) refusedMidUpgrade(id int64) {
	s.t.Helper()
	for what, r := range map[string]stacktest.Response{
		"a pool scale": stacktest.Do(s.t, http.MethodPatch, s.PoolsURL(id, "workers"), `{"count":3}`, s.Bearer(1)),
		"a deletion":   stacktest.Do(s.t, http.MethodDelete, s.APIURL+"/clusters/"+itoa(id), "", s.Bearer(1)),
	} {
		if r.Status != http.StatusConflict || r.ErrorCode(s.t) != "upgrade_in_progress" {
			s.t.Errorf("%s mid-upgrade = %d %s, want 409 upgrade_in_progress", what, r.Status, r.Body)
		}
	}
	if n := s.count(`SELECT count FROM node_pools`); n != 2 {
		s.t.Errorf("the pool's count is %d after a refused scale, want 2", n)
	}
	if n := s.count(`SELECT count(*) FROM kube_clusters WHERE status <> 'active'`); n != 0 {
		s.t.Errorf("%d clusters left active after a refused deletion", n)
	}
}
