package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// Remediation on booted nodes (issue 39): a machine crashes (its PID 1
// killed, as a host losing power: nothing in it runs its stop), k8sapi is
// told nothing, and with remediation on the reconciler judges the silent
// node and replaces it by the path an operator's replacement takes. The
// control-plane case is the etcd lifecycle's replacement step
// (checkReplace), the worker's the pool step's (checkWorkerRemediation).

// proofUnhealthyAfter is what the proof turns remediation on with: the
// shortest unhealthy_after k8sapi takes. The node proof founds with "0"
// (off), so a reboot or a slow boot never starts a replacement by itself.
const proofUnhealthyAfter = "1m"

// setRemediation changes the cluster's remediation settings as an
// operator does: PATCH /clusters/{id} with settings (JSON members),
// answered 200.
func (p *provenCluster) setRemediation(t *testing.T, settings string) {
	t.Helper()
	apiCall(t, p.st, http.MethodPatch, fmt.Sprintf("/clusters/%d", p.cl.ClusterID), "{"+settings+"}", http.StatusOK)
}

// remediationOff turns remediation off and puts the pool's limit back to
// its default.
const remediationOff = `"unhealthy_after":"0","max_unhealthy_percent":40`

// crash kills m (the machine of VM v) at once and answers when.
func (p *provenCluster) crash(t *testing.T, m *harness.Machine, v vm) time.Time {
	t.Helper()
	at := time.Now()
	t.Logf("crashing %s (VM %d), telling k8sapi nothing: %s", m.Name, v.id, m.Crash().Round(time.Millisecond))
	return at
}

// remediated changes the settings so that vmID may be remediated, waits
// until the reconciler decided to replace it (the cluster's trail holds a
// node.remediate event that succeeded, with why) and turns remediation off
// again: the replacement goes on, and nothing else the proof does later
// is judged. It logs the decision and answers how long after crashed it
// came.
func (p *provenCluster) remediated(t *testing.T, role string, vmID int64, crashed time.Time, settings string) time.Duration {
	t.Helper()
	p.setRemediation(t, settings)
	var why string
	eventually(t, p.r, fmt.Sprintf("the reconciler decides to replace VM %d (%s)", vmID, settings), []string{"stack"}, 5*time.Minute,
		func(context.Context) (string, error) {
			e, err := p.newestDecision(vmID)
			if err == nil && e.Outcome != "succeeded" {
				err = fmt.Errorf("the newest decision on VM %d: %s, %s", vmID, e.Outcome, e.Reason)
			}
			why = e.Reason
			return why, err
		})
	decided := time.Since(crashed)
	p.tl.took(role+": crash to replacement decided", decided)
	p.setRemediation(t, remediationOff)
	t.Logf("remediation decided %.0f s after the crash: %s", decided.Seconds(), why)
	return decided
}

// refused turns remediation on with settings and waits until the
// reconciler refused to replace vmID for the reason naming want.
func (p *provenCluster) refused(t *testing.T, vmID int64, settings, want string) string {
	t.Helper()
	p.setRemediation(t, settings)
	var why string
	eventually(t, p.r, fmt.Sprintf("the reconciler refuses to replace VM %d: %s", vmID, want), []string{"stack"}, 5*time.Minute,
		func(context.Context) (string, error) {
			e, err := p.newestDecision(vmID)
			if err == nil && (e.Outcome != "refused" || !strings.Contains(e.Reason, want)) {
				err = fmt.Errorf("the newest decision on VM %d: %s, %s", vmID, e.Outcome, e.Reason)
			}
			why = e.Reason
			return why, err
		})
	return why
}

// trailEvent is an event of GET /clusters/{id}/events, as the proof reads it.
type trailEvent struct {
	Action, Resource, Outcome, Reason string
}

// newestDecision is the newest node.remediate event on vmID; an error (to
// wait on) while there is none.
func (p *provenCluster) newestDecision(vmID int64) (trailEvent, error) {
	code, raw, err := apiAnswer(p.st, http.MethodGet, fmt.Sprintf("/clusters/%d/events?limit=100", p.cl.ClusterID), "")
	if err != nil || code != http.StatusOK {
		return trailEvent{}, fmt.Errorf("GET events: %d %s (%v)", code, raw, err)
	}
	var page struct{ Events []trailEvent }
	if err := json.Unmarshal(raw, &page); err != nil {
		return trailEvent{}, err
	}
	resource := fmt.Sprintf("/clusters/%d/nodes/%d", p.cl.ClusterID, vmID)
	i := slices.IndexFunc(page.Events, func(e trailEvent) bool { return e.Action == "node.remediate" && e.Resource == resource })
	if i < 0 {
		return trailEvent{}, fmt.Errorf("no node.remediate event for VM %d yet", vmID)
	}
	return page.Events[i], nil
}

// remediationOf reads the replacement remediation began for oldVM from
// the cluster's nodes: the old node retiring, and the node not listed in
// before (a name is never handed on).
func (p *provenCluster) remediationOf(t *testing.T, oldVM int64, before []string) replacement {
	t.Helper()
	var rep replacement
	eventually(t, p.r, fmt.Sprintf("the replacement of VM %d listed", oldVM), []string{"stack"}, time.Minute, func(context.Context) (string, error) {
		cv, err := getCluster(p.st, p.cl.ClusterID)
		if err != nil {
			return "", err
		}
		rep = replacement{}
		for _, n := range cv.Nodes {
			switch {
			case n.VMID == oldVM && n.Retiring:
				rep.OldNodeName = n.Name
			case !slices.Contains(before, n.Name):
				rep.NewNodeName = n.Name
			}
		}
		if rep.OldNodeName == "" || rep.NewNodeName == "" {
			return "", fmt.Errorf("nodes %+v", cv.Nodes)
		}
		return rep.OldNodeName + " retiring, " + rep.NewNodeName + " replacing it", nil
	})
	return rep
}

// nodeNames are the cluster's control-plane node names as the API lists them.
func (p *provenCluster) nodeNames(t *testing.T) []string {
	t.Helper()
	cv, err := getCluster(p.st, p.cl.ClusterID)
	if err != nil {
		fatal(t, err)
	}
	var names []string
	for _, n := range cv.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// checkWorkerRemediation crashes the second worker and, with remediation
// on, waits for the reconciler to replace it in its pool: a new worker
// (the cluster's next name) is created and boots, the dead worker's VM is
// deleted. Its Node is deleted as an operator does (k8sapi holds no
// identity in the cluster to do it, docs/NODE-HEALTH.md), and pool-web runs
// on both workers again. It answers the pool's workers now and what held.
func (p *provenCluster) checkWorkerRemediation(t *testing.T, workers []poolWorker) ([]poolWorker, string) {
	t.Helper()
	dead, kept := workers[1], workers[0]
	crashed := p.crash(t, dead.m, dead.v)
	// One of two is half the pool, more than max_unhealthy_percent's
	// default 40%: refused (a storm guard), until the operator allows 50%.
	refusal := p.refused(t, dead.v.id, `"unhealthy_after":"`+proofUnhealthyAfter+`"`, "too many unhealthy")
	t.Logf("refused first, as it must be: %s", refusal)
	decided := p.remediated(t, "worker", dead.v.id, crashed, `"max_unhealthy_percent":50`)
	p.awaitVMDeleted(t, dead.v)
	fresh := p.replacingWorker(t, kept)
	p.bootWorkers(t, fresh)
	p.deleteNode(t, dead.name)
	now := []poolWorker{kept, fresh[0]}
	p.checkWorkersReady(t, now)
	ready := time.Since(crashed)
	p.tl.took("worker: crash to its replacement Ready", ready)
	eventually(t, p.r, "pool-web: one replica on each worker again", p.c.consoles(), 5*time.Minute,
		func(ctx context.Context) (string, error) { return p.c.poolWebOn(ctx, 2) })
	return now, fmt.Sprintf("a crashed worker remediated (refused at 1 of 2 unhealthy over max_unhealthy_percent 40, taken at 50): replacement decided %.0f s and %s Ready %.0f s after the crash",
		decided.Seconds(), fresh[0].name, ready.Seconds())
}

// replacingWorker waits until the pool lists two workers with VMs, kept
// and the one replacing the dead worker, and answers the new one.
func (p *provenCluster) replacingWorker(t *testing.T, kept poolWorker) []poolWorker {
	t.Helper()
	all := p.poolWorkers(t, 2)
	i := slices.IndexFunc(all, func(w poolWorker) bool { return w.v.id != kept.v.id })
	if i < 0 {
		fatalf(t, "the pool lists no worker besides %s", kept.name)
	}
	return all[i : i+1]
}

// deleteNode deletes a Node the platform no longer runs.
func (p *provenCluster) deleteNode(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := p.c.kubectl(ctx, "delete", "node", name, "--ignore-not-found"); err != nil {
		fatalf(t, "deleting the Node %s: %v %s", name, err, out)
	}
}

// remediationSummary is issue 39's line for the run's remediations, from
// the operations the timeline holds: how many crashed nodes came back
// replaced and Ready, and the longest a replacement took ("": none ran).
func (tl *timeline) remediationSummary() string {
	var roles []string
	var longest float64
	for _, op := range tl.operations {
		if role, ok := strings.CutSuffix(op.Phase, ": crash to its replacement Ready"); ok {
			roles = append(roles, role)
			longest = max(longest, op.Seconds)
		}
	}
	if len(roles) == 0 {
		return ""
	}
	return fmt.Sprintf("remediated %d/%d dead nodes in at most %.0f s (%s)", len(roles), len(roles), longest, strings.Join(roles, " and "))
}
