package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	engine "github.com/excloud/k8sapi/internal/operation"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// ReplacementViews are rs as the API shows them.
func ReplacementViews(rs []store.Replacement) []apitypes.NodeReplacement {
	out := make([]apitypes.NodeReplacement, len(rs))
	for i, r := range rs {
		out[i] = replacementViewOf(r)
	}
	return out
}

func replacementViewOf(r store.Replacement) apitypes.NodeReplacement {
	return apitypes.NodeReplacement{ID: r.ID, ClusterID: r.ClusterID, OldVMID: r.OldVMID, OldNodeName: r.OldNodeName,
		NewNodeName: r.NewNodeName, State: r.State, StateReason: r.StateReason, CreatedAt: r.CreatedAt,
		Conditions: engine.Conditions(engine.Observed{State: r.State, ReadyIn: store.ReplacementDone, Message: r.StateReason,
			Op: r.LastOp, CreatedAt: r.CreatedAt})}
}

// ReplaceNode records the replacement of the control-plane node whose VM
// is vmID in one of org's active clusters; the reconciler drives it (the
// new node's VM, its identities, the old VM's deletion once the new node
// is ready). It is refused (409) when it could lose etcd's quorum.
func (s *Service) ReplaceNode(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeReplacement, error) {
	c, err := s.ActiveCluster(ctx, org, clusterID, "its nodes are replaced")
	if err != nil {
		return apitypes.NodeReplacement{}, err
	}
	if err := s.noControlPlaneOperation(ctx, c.ID); err != nil {
		return apitypes.NodeReplacement{}, err
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return apitypes.NodeReplacement{}, usecase.DatabaseError(err)
	}
	old, err := replaceable(ControlPlaneOf(nodes), vmID)
	if err != nil {
		return apitypes.NodeReplacement{}, err
	}
	r, err := s.Store.BeginReplacement(ctx, store.ReplacementStart{OrgID: org.OrgID, Old: old,
		Name: func(ordinal int) string { return clusterspec.NodeName(ordinal, c.ID) }})
	if err != nil {
		return apitypes.NodeReplacement{}, s.replacementRefused(ctx, c.ID, err)
	}
	return replacementViewOf(r), nil
}

// noLiveReplacement: one replacement at a time (its old node is out of
// etcd's quorum until its new one is promoted). The transaction that
// begins a replacement holds the rule too.
func (s *Service) noLiveReplacement(ctx context.Context, clusterID int64) error {
	r, err := s.Store.LiveReplacement(ctx, clusterID)
	switch {
	case err == nil:
		return ReplacementInProgress(clusterID, r)
	case errors.Is(err, store.ErrNotFound):
		return nil
	}
	return usecase.DatabaseError(err)
}

// replacementRefused maps a replacement that could not begin to its answer.
func (s *Service) replacementRefused(ctx context.Context, clusterID int64, err error) error {
	switch {
	case errors.Is(err, store.ErrScaling):
		return apperr.ScalingInProgress.New()
	case errors.Is(err, store.ErrReplacing):
		r, lerr := s.Store.LiveReplacement(ctx, clusterID)
		if lerr != nil {
			return apperr.ReplacementInProgress.New()
		}
		return ReplacementInProgress(clusterID, r)
	case errors.Is(err, store.ErrClusterNotActive):
		return apperr.ClusterNotActive.New()
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound.Detail("the node is no longer a control-plane node of this cluster")
	}
	return usecase.DatabaseError(err)
}

func ReplacementInProgress(clusterID int64, r store.Replacement) error {
	return apperr.ReplacementInProgress.Detailf("node %s is being replaced by %s (replacement %d); poll GET /clusters/%d",
		r.OldNodeName, r.NewNodeName, r.ID, clusterID)
}

// replaceable is the control-plane node of VM vmID among cp, if replacing
// it keeps etcd's quorum: a majority of the other members (as k8sapi
// knows them: their bootstrap reported ready, and not retiring) stays up
// while the old member is removed and the new one is a learner.
func replaceable(cp []store.Node, vmID int64) (store.Node, error) {
	var old store.Node
	var others []store.Node
	for _, n := range cp {
		if n.VMID == vmID && vmID != 0 {
			old = n
		} else {
			others = append(others, n)
		}
	}
	if old.ID == 0 {
		return old, apperr.NotFound.Detailf("no control-plane node of this cluster has VM %d (a worker is replaced by scaling its pool)", vmID)
	}
	if old.Retiring {
		return old, apperr.ReplacementInProgress.Detailf("node %s is already being replaced or retired", old.Name)
	}
	return old, quorumKept(old, others, "replacing")
}

// quorumKept: the other members, a majority of them ready, hold the
// quorum while old is out (doing: what takes it out, for the answer).
func quorumKept(old store.Node, others []store.Node, doing string) error {
	if len(others) == 0 {
		return apperr.WouldLoseQuorum.Detailf("%s is the cluster's only control-plane node: etcd would have no member left; "+
			"restore a snapshot into a new cluster instead (docs/RESTORE.md)", old.Name)
	}
	if ready, need := readyCount(others), len(others)/2+1; ready < need {
		return apperr.WouldLoseQuorum.Detailf("%d of the %d other control-plane nodes reported ready; %s %s needs %d of them (a majority)",
			ready, len(others), doing, old.Name, need)
	}
	return nil
}

// replacement is one replacement as the reconciler drives it: the row,
// the node being replaced, and the new node as a one-node operation of
// the cluster (under the cluster's lease), so founding's node steps make it.
type replacement struct {
	row store.Replacement
	old store.Node
	op  *NodeOp
	// readyWithin is how long the new node has to report ready.
	readyWithin time.Duration
}

func (r *replacement) newNode() store.Node { return r.op.Nodes[0] }

// notReadyInTime ends a replacement or a scaling whose new node did not
// report ready within its time.
type notReadyInTime struct {
	node      string
	within    time.Duration
	clusterID int64
}

func (e *notReadyInTime) Error() string {
	return fmt.Sprintf("the new node %s did not report ready within %s; it is kept: see its bootstrap "+
		"(GET /clusters/%d/nodes/{vm_id}/bootstrap), re-open it or replace it", e.node, e.within, e.clusterID)
}

// replacementSteps is the order of a replacement: the new node is made as
// founding makes a node; once it reports ready (its etcd joined as a
// learner and was promoted, its API server serves), the control-plane name
// is moved off the old node (nameoff.go), then the old VM is deleted and
// its row removed.
func (s *Service) replacementSteps() []engine.Step[*replacement] {
	return append(engine.On(s.NodeSteps(), func(r *replacement) *NodeOp { return r.op }),
		engine.Step[*replacement]{Name: "new node ready", Run: s.awaitNewNode},
		engine.Step[*replacement]{Name: "control-plane name off the old node", Run: func(ctx context.Context, r *replacement, _ time.Time) error {
			return s.nameOff(ctx, &r.op.Cluster, r.old, r.newNode(), nil)
		}},
		engine.Step[*replacement]{Name: "old VM", Run: s.deleteOldVM},
		engine.Step[*replacement]{Name: "retirement", Run: s.retireOld},
	)
}

// awaitNewNode waits (the engine lets go, and the next runs look again)
// until the new node reports ready (its etcd joined as a learner and was
// promoted, its API server serves), for at most readyWithin.
func (s *Service) awaitNewNode(_ context.Context, r *replacement, _ time.Time) error {
	return s.awaitReady(r.newNode(), r.row.CreatedAt, r.readyWithin)
}

// awaitReady is nil once new node n reported ready, a wait until within
// has passed since since, then notReadyInTime.
func (s *Service) awaitReady(n store.Node, since time.Time, within time.Duration) error {
	switch {
	case n.ReadyAt != nil:
		return nil
	case s.Clock().Sub(since) <= within:
		return engine.Wait("the new node has not reported ready yet")
	}
	return &notReadyInTime{node: n.Name, within: within, clusterID: n.ClusterID}
}

func (s *Service) deleteOldVM(ctx context.Context, r *replacement, deadline time.Time) error {
	if err := s.InTime(deadline); err != nil {
		return err
	}
	return s.vms().Delete(ctx, &r.op.Cluster, r.old)
}

// retireOld removes the old node's row (its identities and fetches go
// with it: its proofs name a VM no node has) with the etcd CRL that lists
// its etcd-CA serials, and ends the replacement, then points the cluster's
// DNS name at the nodes that stay.
func (s *Service) retireOld(ctx context.Context, r *replacement, _ time.Time) error {
	c := &r.op.Cluster
	crl, err := s.etcdRevocation(ctx, c, r.old)
	if err != nil {
		return err // the next run retries: the old node is removed only with the CRL that lists it
	}
	end := store.ReplacementEnd{State: store.ReplacementDone, Remove: r.old.ID, CRL: crl}
	if err := usecase.Recorded(s.Store.EndReplacement(ctx, c.ID, r.op.Lease.Owner, r.row.ID, end)); err != nil {
		return err
	}
	r.row.State = store.ReplacementDone
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		s.Logger().WarnContext(ctx, "reading the nodes to point DNS failed", "cluster_id", c.ID, "cause", err.Error())
		return nil
	}
	s.PointDNS(ctx, c, LiveControlPlane(nodes))
	return nil
}

// replacementFor loads the replacement of claimed cluster c: its row, the
// old node and the new one.
func (s *Service) replacementFor(ctx context.Context, c store.Cluster, lease store.Lease, readyWithin time.Duration) (*replacement, error) {
	row, err := s.Store.LiveReplacement(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	r := &replacement{row: row, op: &NodeOp{Cluster: c, Lease: lease}, readyWithin: readyWithin}
	for _, n := range nodes {
		switch {
		case n.ID == row.OldNodeID:
			r.old = n
		case row.NewNodeID != nil && n.ID == *row.NewNodeID:
			r.op.Nodes = []store.Node{n}
		}
	}
	if len(r.op.Nodes) == 0 {
		return nil, fmt.Errorf("replacement %d: its new node's row is missing", row.ID)
	}
	return r, nil
}
