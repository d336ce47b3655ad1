package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Service plans, records, pauses, resumes, aborts and drives the upgrades
// of an org's clusters.
type Service struct{ *usecase.Deps }

// Upgrade answers the plan of moving one of org's active clusters to
// req's version, its gates as they stand; unless it is a dry run, it
// records the upgrade (the reconciler drives it), refused with the first
// gate that failed and was not overridden.
func (s *Service) Upgrade(ctx context.Context, org auth.Principal, clusterID int64, req apitypes.UpgradeRequest) (apitypes.UpgradeAnswer, error) {
	surge, drain, err := settings(req)
	if err != nil {
		return apitypes.UpgradeAnswer{}, err
	}
	c, err := s.ActiveCluster(ctx, org, clusterID, "it is upgraded")
	if err != nil {
		return apitypes.UpgradeAnswer{}, err
	}
	if err := s.noLiveUpgrade(ctx, c.ID); err != nil {
		return apitypes.UpgradeAnswer{}, err
	}
	passes, err := passesTo(c.KubernetesVersion, req.KubernetesVersion)
	if err != nil {
		return apitypes.UpgradeAnswer{}, err
	}
	m, err := s.Store.MembersOf(ctx, []int64{c.ID})
	if err != nil {
		return apitypes.UpgradeAnswer{}, usecase.DatabaseError(err)
	}
	f := facts{cluster: c, nodes: m.Nodes, passes: passes, override: req.AllowDeprecatedAPIs, now: s.Clock()}
	plan := planOf(f, m.Pools, surge, drain)
	if req.DryRun {
		return apitypes.UpgradeAnswer{Plan: plan}, nil
	}
	if err := s.begins(f, plan); err != nil {
		return apitypes.UpgradeAnswer{}, err
	}
	u, err := s.Store.BeginUpgrade(ctx, org.OrgID, store.Upgrade{ClusterID: c.ID, FromVersion: c.KubernetesVersion,
		ToVersion: req.KubernetesVersion, PassVersion: passes[0].To, Surge: surge, DrainTimeoutSeconds: drain,
		DeprecatedAPIsOverridden: req.AllowDeprecatedAPIs && !gatePassed(plan, "deprecated_apis"), RequestedBy: org.Who()})
	if err != nil {
		return apitypes.UpgradeAnswer{}, s.beginRefused(ctx, c.ID, err)
	}
	v := ViewOf(u)
	return apitypes.UpgradeAnswer{Plan: plan, Upgrade: &v}, nil
}

// begins says whether the upgrade of f may begin: every gate passed (or
// was overridden) and every pass's downloads are pinned.
func (s *Service) begins(f facts, plan apitypes.UpgradePlan) error {
	if err := refusal(plan.Gates); err != nil {
		return err
	}
	cni, err := clusterfacts.ParseCNI(f.cluster.CNI)
	if err != nil {
		return err
	}
	for _, p := range f.passes {
		a, err := s.passSet(f.cluster, p.To, cni)
		if err != nil {
			return err
		}
		if missing := a.Unpinned(p.To, cni, artifacts.FoundingArch); len(missing) > 0 && !s.Settings.Artifacts.DigestFallback {
			return apperr.ArtifactsNotPinned.Detailf("the artifact manifest pins no SHA-256 for %s's %s (%s); nothing was changed. "+
				"Pin them (scripts/pin-artifacts.sh) or allow the published-digest fallback (ARTIFACT_DIGEST_FALLBACK=true)",
				p.To, strings.Join(missing, ", "), artifacts.FoundingArch)
		}
	}
	return nil
}

// passSet is the set the pass's nodes download by: the cluster's record
// at the pass's release (its pins, a later etcd patch kept), or the
// deployment's for a cluster that has no record.
func (s *Service) passSet(c store.Cluster, version string, cni clusterfacts.CNI) (artifacts.Set, error) {
	a, err := s.setAt(c, version)
	if a == nil || err != nil {
		r, _ := artifacts.ReleaseOf(version) // passesTo walked the table
		return s.Settings.Artifacts.For(r, "").Record(version, cni), err
	}
	return *a, nil
}

func gatePassed(plan apitypes.UpgradePlan, name string) bool {
	for _, g := range plan.Gates {
		if g.Name == name {
			return g.Passed
		}
	}
	return false
}

// planOf is the plan of f: its passes, gates, the control-plane nodes in
// the order they are replaced (by ordinal) and each pool's workers.
func planOf(f facts, pools []store.Pool, surge, drain int) apitypes.UpgradePlan {
	p := apitypes.UpgradePlan{ClusterID: f.cluster.ID, From: f.passes[0].From, To: f.passes[len(f.passes)-1].To, Passes: f.passes,
		Gates: judged(f), ControlPlane: []apitypes.PlannedNode{}, Pools: []apitypes.PlannedPool{}, Surge: surge, DrainTimeoutSeconds: drain}
	for _, n := range live(controlplane.ControlPlaneOf(f.nodes)) {
		p.ControlPlane = append(p.ControlPlane, plannedNode(n))
	}
	for _, pool := range pools {
		pp := apitypes.PlannedPool{Name: pool.Name, Nodes: []apitypes.PlannedNode{}}
		for _, n := range live(f.nodes) {
			if n.PoolID == pool.ID {
				pp.Nodes = append(pp.Nodes, plannedNode(n))
			}
		}
		p.Pools = append(p.Pools, pp)
	}
	return p
}

func plannedNode(n store.Node) apitypes.PlannedNode {
	return apitypes.PlannedNode{Name: n.Name, VMID: n.VMID, From: n.KubernetesVersion}
}

// noLiveUpgrade: one upgrade of a cluster at a time (the unique index
// holds it too).
func (s *Service) noLiveUpgrade(ctx context.Context, clusterID int64) error {
	u, err := s.Store.LiveUpgrade(ctx, clusterID)
	switch {
	case err == nil:
		return inProgress(u)
	case errors.Is(err, store.ErrNotFound):
		return nil
	}
	return usecase.DatabaseError(err)
}

func inProgress(u store.Upgrade) error {
	return apperr.UpgradeInProgress.Detailf("upgrade %d to %s is %s; poll GET /clusters/%d/upgrade", u.ID, u.ToVersion, u.State, u.ClusterID)
}

// beginRefused maps an upgrade that could not be recorded to its answer.
func (s *Service) beginRefused(ctx context.Context, clusterID int64, err error) error {
	switch {
	case errors.Is(err, store.ErrUpgrading):
		return s.noLiveUpgrade(ctx, clusterID)
	case errors.Is(err, store.ErrReplacing):
		return apperr.ReplacementInProgress.Detailf("a control-plane node of the cluster is being replaced; upgrade it once that is done (GET /clusters/%d)", clusterID)
	case errors.Is(err, store.ErrClusterNotActive):
		return apperr.ClusterNotActive.New()
	}
	return usecase.DatabaseError(err)
}

// ViewOf is an upgrade's row as the API shows it.
func ViewOf(u store.Upgrade) apitypes.Upgrade {
	return apitypes.Upgrade{ID: u.ID, ClusterID: u.ClusterID, From: u.FromVersion, To: u.ToVersion, PassTo: u.PassVersion,
		State: u.State, StateReason: u.StateReason, PausedNode: u.PausedNode, Surge: u.Surge, DrainTimeoutSeconds: u.DrainTimeoutSeconds,
		DeprecatedAPIsOverridden: u.DeprecatedAPIsOverridden, SnapshotID: u.SnapshotID, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// Current is the newest upgrade of one of org's clusters.
func (s *Service) Current(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error) {
	c, err := s.OrgCluster(ctx, org, clusterID)
	if err != nil {
		return apitypes.Upgrade{}, err
	}
	u, err := s.Store.LatestUpgrade(ctx, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return apitypes.Upgrade{}, apperr.NotFound.Detailf("cluster %d has never been upgraded", c.ID)
	}
	if err != nil {
		return apitypes.Upgrade{}, usecase.DatabaseError(err)
	}
	return ViewOf(u), nil
}

// Resume moves one of org's clusters' paused upgrade on: the reconciler
// judges the gate that paused it again.
func (s *Service) Resume(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error) {
	return s.move(ctx, org, clusterID, []string{store.UpgradePaused}, store.UpgradeUpgrading, "")
}

// Abort turns one of org's clusters' live upgrade back: the control-plane
// nodes already at the pass's version are replaced by nodes at the
// cluster's. Refused once every API server is at the pass's version (the
// cluster's version moved): a restore is the way back from there.
func (s *Service) Abort(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.Upgrade, error) {
	c, err := s.ActiveCluster(ctx, org, clusterID, "its upgrade is aborted")
	if err != nil {
		return apitypes.Upgrade{}, err
	}
	u, err := s.Store.LiveUpgrade(ctx, c.ID)
	if err == nil && c.KubernetesVersion == u.PassVersion {
		return apitypes.Upgrade{}, s.pastAbort(u)
	}
	return s.move(ctx, org, clusterID, []string{store.UpgradeUpgrading, store.UpgradePaused}, store.UpgradeAborting,
		"aborted by "+org.Who()+": the control plane goes back to "+c.KubernetesVersion)
}

func (s *Service) pastAbort(u store.Upgrade) error {
	where := "an earlier snapshot"
	if u.SnapshotID != nil {
		where = fmt.Sprintf("snapshot %d, taken before the first node moved", *u.SnapshotID)
	}
	return apperr.UpgradePastAbort.Detailf("every API server of cluster %d is at %s; the way back is a restore from %s into a new cluster (docs/RESTORE.md)",
		u.ClusterID, u.PassVersion, where)
}

// move moves the live upgrade of one of org's active clusters from one
// of from to to.
func (s *Service) move(ctx context.Context, org auth.Principal, clusterID int64, from []string, to, reason string) (apitypes.Upgrade, error) {
	c, err := s.ActiveCluster(ctx, org, clusterID, "its upgrade is moved on")
	if err != nil {
		return apitypes.Upgrade{}, err
	}
	u, err := s.Store.MoveUpgrade(ctx, c.ID, from, to, reason)
	if errors.Is(err, store.ErrNotFound) {
		return apitypes.Upgrade{}, s.notMovable(ctx, c.ID, to)
	}
	if err != nil {
		return apitypes.Upgrade{}, usecase.DatabaseError(err)
	}
	return ViewOf(u), nil
}

// notMovable says why the cluster's upgrade could not move to to.
func (s *Service) notMovable(ctx context.Context, clusterID int64, to string) error {
	u, err := s.Store.LiveUpgrade(ctx, clusterID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound.Detailf("cluster %d has no upgrade in progress", clusterID)
	case err != nil:
		return usecase.DatabaseError(err)
	case to == store.UpgradeUpgrading:
		return apperr.UpgradeNotPaused.Detailf("upgrade %d is %s; only a paused upgrade resumes", u.ID, u.State)
	}
	return inProgress(u)
}
