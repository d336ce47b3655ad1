package upgrade

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Kind names the kind in the reconciler's counts.
const Kind = "cluster upgrade"

// run is one upgrade as the reconciler drives it: its row, the claimed
// cluster with its lease, and the cluster's nodes as loaded.
type run struct {
	u     store.Upgrade
	c     store.Cluster
	lease store.Lease
	nodes []store.Node
}

// paused ends a run whose health gate failed: the upgrade waits on the
// operator, with why and where (the node).
type paused struct{ node, reason string }

func (p *paused) Error() string { return p.reason }

// handOver ends a run that began a replacement: the upgrade's lease is let
// go at once, and the replacement's own operation (no lease yet, so
// claimed first) drives it; the upgrade, claimed while it is in progress,
// waits on it (healthGate).
func handOver(what string) error { return fmt.Errorf("%s: %w", what, engine.ErrOutOfTime) }

// steps is the order of an upgrade's pass, or of its abort.
func (s *Service) steps(r *run) []engine.Step[*run] {
	if r.u.State == store.UpgradeAborting {
		return []engine.Step[*run]{
			{Name: "control plane back", Run: s.controlPlaneBack},
			{Name: "aborted", Run: s.aborted},
		}
	}
	return []engine.Step[*run]{
		{Name: "etcd snapshot", Run: s.snapshot},
		{Name: "control plane", Run: s.controlPlane},
		{Name: "cluster version", Run: s.clusterVersion},
		{Name: "addons", Run: s.addons},
		{Name: "worker pools", Run: s.workerPools},
		{Name: "next pass", Run: s.nextPassOrDone},
	}
}

func (s *Service) kind() engine.Kind[*run] {
	return engine.Kind[*run]{
		Name:    Kind,
		Steps:   s.steps,
		Release: s.release,
		Undo:    s.pause,
	}
}

// Reconcile drives claimed cluster c's upgrade as far as it goes now.
func (s *Service) Reconcile(ctx context.Context, c store.Cluster, lease store.Lease, pass usecase.Pass) (string, engine.Result) {
	r, err := s.load(ctx, c, lease)
	if err != nil {
		s.letGo(ctx, &run{c: c, lease: lease}, pass)
		return Kind, engine.Retry(err)
	}
	res := engine.Drive(ctx, s.Driver(pass.RetryAfter), s.kind(), r, pass.Deadline)
	if res.Outcome == engine.Retrying && !errors.Is(res.Err, store.ErrLeaseLost) {
		s.letGo(ctx, r, pass)
	}
	return Kind, res
}

func (s *Service) load(ctx context.Context, c store.Cluster, lease store.Lease) (*run, error) {
	u, err := s.Store.LiveUpgrade(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Store.ClusterNodes(ctx, c.ID)
	return &run{u: u, c: c, lease: lease, nodes: nodes}, err
}

// record writes the run's upgrade as ch leaves it, fenced by the lease
// and the state the run loaded.
func (s *Service) record(ctx context.Context, r *run, ch func(*store.Upgrade)) error {
	next := r.u
	ch(&next)
	var failure *string // the chosen node's report writes it; the run only clears it
	if next.AddonsFailure != r.u.AddonsFailure {
		failure = &next.AddonsFailure
	}
	err := s.Store.RecordUpgrade(ctx, r.c.ID, r.lease.Owner, r.u.ID, store.UpgradeChange{Was: r.u.State, State: next.State,
		Reason: next.StateReason, Node: next.PausedNode, PassVersion: next.PassVersion, SnapshotID: next.SnapshotID, ReplacementID: next.ReplacementID,
		SurgePoolID: next.SurgePoolID, SurgeBase: next.SurgeBase, SurgeCount: next.SurgeCount,
		AddonsNode: next.AddonsNode, AddonsAskedAt: next.AddonsAskedAt, AddonsFailure: failure})
	if err := usecase.Recorded(err); err != nil {
		return err
	}
	r.u = next
	return nil
}

// snapshot takes the pre-upgrade etcd snapshot once, and goes on only
// once its upload is verified (the node's report is checked against the
// stored object); a failed one pauses the upgrade.
func (s *Service) snapshot(ctx context.Context, r *run, deadline time.Time) error {
	if r.u.SnapshotID == nil {
		return s.takeSnapshot(ctx, r, deadline)
	}
	snap, err := s.Store.SnapshotByID(ctx, r.c.ID, *r.u.SnapshotID)
	if err != nil {
		return usecase.Recorded(err)
	}
	switch snap.State {
	case store.SnapshotUploaded:
		return nil
	case store.SnapshotFailed:
		return &paused{reason: fmt.Sprintf("gate etcd_snapshot: the pre-upgrade snapshot %d failed: %s; no node has moved",
			snap.ID, failureOf(snap))}
	}
	return engine.Wait(fmt.Sprintf("the pre-upgrade snapshot %d is being taken", snap.ID))
}

func (s *Service) takeSnapshot(ctx context.Context, r *run, deadline time.Time) error {
	if err := s.InTime(deadline); err != nil {
		return err
	}
	sc, err := s.Store.SnapshotCluster(ctx, r.c.OrgID, r.c.ID)
	if err != nil {
		return usecase.Recorded(err)
	}
	vm, ok := etcdsnapshot.ChooseNode(sc.Nodes)
	if !ok {
		return &paused{reason: "gate etcd_snapshot: no control-plane node is ready to take the pre-upgrade snapshot; no node has moved"}
	}
	made, err := s.Store.RecordEtcdSnapshots(ctx, []store.EtcdSnapshot{{ClusterID: r.c.ID, Trigger: store.SnapshotOnDemand,
		RequestedBy: r.u.RequestedBy, RequestID: fmt.Sprintf("upgrade-%d", r.u.ID), NodeVMID: vm, RequestedAt: s.Clock()}})
	if err != nil {
		return usecase.Recorded(err)
	}
	if len(made) == 0 {
		return engine.Wait("another snapshot of the cluster is pending")
	}
	if err := s.record(ctx, r, func(u *store.Upgrade) { u.SnapshotID = &made[0].ID }); err != nil {
		return err
	}
	return engine.Wait(fmt.Sprintf("the pre-upgrade snapshot %d is being taken", made[0].ID))
}

// controlPlane replaces the next control-plane node not at the pass's
// version, one at a time, after the health gate (every member voting and
// healthy, the last replacement done).
func (s *Service) controlPlane(ctx context.Context, r *run, deadline time.Time) error {
	return s.moveControlPlane(ctx, r, r.u.PassVersion, deadline)
}

// controlPlaneBack replaces the control-plane nodes an aborted pass moved
// by nodes at the cluster's version, by the same path.
func (s *Service) controlPlaneBack(ctx context.Context, r *run, deadline time.Time) error {
	return s.moveControlPlane(ctx, r, r.c.KubernetesVersion, deadline)
}

func (s *Service) moveControlPlane(ctx context.Context, r *run, version string, deadline time.Time) error {
	if err := s.healthGate(ctx, r); err != nil {
		return err
	}
	for _, n := range live(controlplane.ControlPlaneOf(r.nodes)) {
		if n.KubernetesVersion != version {
			return s.replace(ctx, r, n, version, deadline)
		}
	}
	return nil
}

// healthGate: the upgrade's last replacement ended done, and every etcd
// member is voting and healthy; a failure pauses naming the node.
func (s *Service) healthGate(ctx context.Context, r *run) error {
	if r.u.ReplacementID != nil {
		rep, err := s.Store.ReplacementByID(ctx, r.c.ID, *r.u.ReplacementID)
		if err != nil {
			return usecase.Recorded(err)
		}
		if rep.LastOp.Live() {
			return engine.Wait(fmt.Sprintf("%s is being replaced by %s", rep.OldNodeName, rep.NewNodeName))
		}
		if rep.State == store.ReplacementFailed {
			return &paused{node: rep.NewNodeName, reason: fmt.Sprintf("health gate: the replacement of %s by %s failed: %s",
				rep.OldNodeName, rep.NewNodeName, rep.StateReason)}
		}
	}
	for _, n := range controlplane.ControlPlaneOf(r.nodes) {
		if !ready(n) || n.Retiring {
			return &paused{node: n.Name, reason: fmt.Sprintf("health gate etcd_healthy: %s is not voting and healthy (%s)", n.Name, n.Phase)}
		}
	}
	return nil
}

// replace begins the replacement of n by a node at version and hands the
// cluster over to the replacement's kind.
func (s *Service) replace(ctx context.Context, r *run, n store.Node, version string, deadline time.Time) error {
	if err := s.InTime(deadline); err != nil {
		return err
	}
	rep, err := s.Store.BeginReplacement(ctx, store.ReplacementStart{OrgID: r.c.OrgID, Old: n, KubernetesVersion: version,
		Name: func(ordinal int) string { return clusterspec.NodeName(ordinal, r.c.ID) }})
	if err != nil {
		return usecase.Recorded(err)
	}
	if err := s.record(ctx, r, func(u *store.Upgrade) { u.ReplacementID = &rep.ID }); err != nil {
		return err
	}
	return handOver(fmt.Sprintf("%s is replaced by %s at %s", n.Name, rep.NewNodeName, version))
}

// clusterVersion moves the cluster's version and artifact record to the
// pass's once every API server is at it: workers made from now on are at
// it, and the old ones render from the record at their own release.
func (s *Service) clusterVersion(ctx context.Context, r *run, _ time.Time) error {
	if r.c.KubernetesVersion == r.u.PassVersion {
		return nil
	}
	record, err := s.recordAt(r.c, r.u.PassVersion)
	if err != nil {
		return err
	}
	if err := usecase.Recorded(s.Store.SetClusterVersion(ctx, r.c.ID, r.lease.Owner, r.u.PassVersion, record)); err != nil {
		return err
	}
	r.c.KubernetesVersion, r.c.Artifacts = r.u.PassVersion, record
	return nil
}

// recordAt is c's artifact record at version (artifacts.Set.AtRelease);
// nil for a cluster that never had one.
func (s *Service) recordAt(c store.Cluster, version string) ([]byte, error) {
	a, err := s.setAt(c, version)
	if a == nil || err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// setAt is c's recorded set as its nodes at version use it
// (artifacts.Set.AtRelease); nil for a cluster that never had one.
func (s *Service) setAt(c store.Cluster, version string) (*artifacts.Set, error) {
	if c.Artifacts == nil {
		return nil, nil
	}
	var a artifacts.Set
	if err := json.Unmarshal(c.Artifacts, &a); err != nil {
		return nil, fmt.Errorf("reading cluster %d's recorded artifacts: %w", c.ID, err)
	}
	r, _ := artifacts.ReleaseOf(version) // the pass walked the table
	cni, err := clusterfacts.ParseCNI(c.CNI)
	if err != nil {
		return nil, err
	}
	at := a.AtRelease(r, s.Settings.Artifacts, cni)
	return &at, nil
}

// nextPassOrDone starts the chain's next pass, or ends the upgrade done.
func (s *Service) nextPassOrDone(ctx context.Context, r *run, _ time.Time) error {
	if r.u.PassVersion != r.u.ToVersion {
		next, _ := nextPass(r.u.PassVersion, r.u.ToVersion) // Upgrade walked the chain
		if err := s.record(ctx, r, func(u *store.Upgrade) {
			u.PassVersion, u.ReplacementID, u.AddonsNode, u.AddonsAskedAt = next, nil, "", nil
		}); err != nil {
			return err
		}
		return handOver("the pass to " + next + " begins")
	}
	return s.end(ctx, r, store.UpgradeDone, "")
}

// aborted ends an abort whose control plane is back at the cluster's
// version.
func (s *Service) aborted(ctx context.Context, r *run, _ time.Time) error {
	return s.end(ctx, r, store.UpgradeAborted, r.u.StateReason+"; every control-plane node is at "+r.c.KubernetesVersion)
}

// end settles the upgrade in state, which ends its operation.
func (s *Service) end(ctx context.Context, r *run, state, reason string) error {
	return s.record(ctx, r, func(u *store.Upgrade) { u.State, u.StateReason, u.ReplacementID = state, reason, nil })
}

// pause records a run that failed: a failed health gate pauses the
// upgrade (nil: the run is over); any other failure is retried.
func (s *Service) pause(ctx context.Context, r *run, cause error) error {
	var p *paused
	if !errors.As(cause, &p) {
		return cause
	}
	return s.record(ctx, r, func(u *store.Upgrade) { u.State, u.StateReason, u.PausedNode = store.UpgradePaused, p.reason, p.node })
}

// release lets go of r's operation until until, at step.
func (s *Service) release(ctx context.Context, r *run, until time.Time, step string) error {
	return usecase.Recorded(s.Store.ReleaseLease(context.WithoutCancel(ctx), r.c.ID, r.lease.Owner, until, step))
}

// letGo releases a run that failed for a later run after RetryAfter.
func (s *Service) letGo(ctx context.Context, r *run, pass usecase.Pass) {
	err := s.release(ctx, r, s.Clock().Add(cmp.Or(pass.RetryAfter, usecase.DefaultRetryAfter)), "")
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		s.Logger().WarnContext(ctx, "releasing an upgrade failed; its lease runs out", "cluster_id", r.c.ID, "cause", err.Error())
	}
}

func failureOf(s store.EtcdSnapshot) string {
	if s.Failure == nil {
		return "no reason reported"
	}
	return *s.Failure
}
