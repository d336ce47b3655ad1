package reconciler

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/nodepool"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// remediate is the run's remediation sweep (docs/NODE-HEALTH.md): every
// active cluster with a node that stopped reporting or reports a failing
// check is judged (nodehealth.Decide), and what was decided is carried
// out through the existing replacement paths: a control-plane node's
// replacement (recorded here, driven by the replacement kind in this same
// run), a worker's replacement in its pool (driven here). Every decision,
// taken or refused, is in the cluster's trail with its reason (a refusal
// once per reason, not every minute it holds) and in the report's counts.
// A cluster that cannot be judged now is left to the next run.
func (r *Reconciler) remediate(ctx context.Context, rep *Report) error {
	d := r.Deps
	refs, err := d.Store.RemediationCandidates(ctx, d.Clock().Add(-nodehealth.Grace))
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < 30*time.Second {
			return nil // the rest are judged by the next run
		}
		if err := r.remediateCluster(r.actingFor(ctx, ref.OrgID), ref, rep); err != nil {
			d.Logger().WarnContext(ctx, "judging a cluster's nodes for remediation failed; the next run judges again",
				"cluster_id", ref.ID, "cause", err.Error())
		}
	}
	return nil
}

// remediateCluster judges one cluster's nodes and carries out the
// decisions.
func (r *Reconciler) remediateCluster(ctx context.Context, ref store.ClusterRef, rep *Report) error {
	s, err := r.situation(ctx, ref)
	if err != nil {
		return err
	}
	for _, dec := range nodehealth.Decide(s) {
		if dec.Take {
			dec = r.replace(ctx, s.Cluster, dec, rep)
		}
		r.record(ctx, s.Cluster, dec, rep)
	}
	return nil
}

// situation reads what a cluster's judgment needs, in three round trips:
// the cluster, its nodes and pools, the operations running on it.
func (r *Reconciler) situation(ctx context.Context, ref store.ClusterRef) (nodehealth.Situation, error) {
	st, now := r.Deps.Store, r.Deps.Clock()
	c, err := st.Cluster(ctx, ref.OrgID, ref.ID)
	if err != nil {
		return nodehealth.Situation{}, err
	}
	m, err := st.MembersOf(ctx, []int64{c.ID})
	if err != nil {
		return nodehealth.Situation{}, err
	}
	running, err := st.ClusterOperations(ctx, c.ID)
	return nodehealth.Situation{Cluster: c, Nodes: m.Nodes, Pools: m.Pools, Running: running, Now: now}, err
}

// replace begins the replacement dec took: a refusal of the path itself
// (its own quorum rule, a pool that turned busy, a dependency that
// failed) turns the decision into a refusal with that reason.
func (r *Reconciler) replace(ctx context.Context, c store.Cluster, dec nodehealth.Decision, rep *Report) nodehealth.Decision {
	var err error
	if dec.Node.Role == store.RoleControlPlane {
		cp := &controlplane.Service{Deps: r.Deps}
		_, err = cp.ReplaceNode(ctx, auth.NewPrincipal(c.OrgID, 0, r.ServiceToken), c.ID, dec.Node.VMID)
	} else {
		err = r.replaceWorker(ctx, c, dec.Node, rep)
	}
	if err != nil {
		dec.Take, dec.Reason = false, "the replacement could not begin: "+err.Error()
	}
	return dec
}

// replaceWorker begins and drives a worker's replacement, counting how
// its pool operation ended as the pool kind's are.
func (r *Reconciler) replaceWorker(ctx context.Context, c store.Cluster, n store.Node, rep *Report) error {
	pools := &nodepool.Service{Deps: r.Deps}
	res, err := pools.ReplaceWorker(ctx, c, n, r.Deps.NewLease(r.Lease, DefaultLease), r.pass(ctx))
	if err != nil {
		return err
	}
	if p := rep.counter(nodepool.Pool, res.Outcome); p != nil {
		*p++
	}
	if res.Outcome == engine.Retrying {
		r.Deps.Logger().WarnContext(ctx, "a worker's replacement goes on at a later run", "node", n.Name, "cause", res.Err.Error())
	}
	return nil
}

// record counts dec and writes it to the cluster's trail: a replacement
// begun every time, a refusal when its reason is new for the node.
func (r *Reconciler) record(ctx context.Context, c store.Cluster, dec nodehealth.Decision, rep *Report) {
	e := audit.Event{At: r.Deps.Clock(), OrgID: c.OrgID, ClusterID: c.ID, Principal: audit.ReconcilerPrincipal, Action: audit.Remediate,
		Resource: fmt.Sprintf("/clusters/%d/nodes/%d", c.ID, dec.Node.VMID)}
	if dec.Take {
		rep.Remediated++
		e.Outcome, e.Status, e.Reason = audit.Succeeded, http.StatusAccepted, fmt.Sprintf("%s is replaced: %s", dec.Node.Name, dec.Why)
	} else {
		rep.RemediationsRefused++
		e.Outcome, e.Status, e.Reason = audit.Refused, http.StatusConflict, fmt.Sprintf("%s is not replaced (%s): %s", dec.Node.Name, dec.Why, dec.Reason)
		if fresh, err := r.Deps.Store.NoteRemediationRefused(ctx, dec.Node.ID, dec.Reason); err != nil || !fresh {
			return // already in the trail (or the note failed: the next run tries again)
		}
	}
	r.writeEvent(ctx, e)
}

// writeEvent writes e to the trail and the log; a trail that cannot be
// written leaves the log's line.
func (r *Reconciler) writeEvent(ctx context.Context, e audit.Event) {
	log := r.Deps.Logger()
	log.InfoContext(ctx, "audit", "audit", e)
	if _, err := r.Deps.Store.RecordAudit(ctx, e); err != nil {
		log.WarnContext(ctx, "recording a remediation in the trail failed", "cluster_id", e.ClusterID, "cause", apperr.DatabaseUnavailable.Wrap(err).Error())
	}
}
