package upgrade

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/clusterspec"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// workerPools moves each pool's workers to the pass's version by surge,
// one pool at a time, through the pools' own operations (their kind makes
// and deletes the VMs): the upgrade records the surge (the pool, its count
// before, how many new workers), scales the pool up by it (new workers
// take the cluster's version, which moved already), waits until they are
// ready, then retires as many old workers by name and sets the count back.
// A retired worker drains itself as its VM powers off (PodDisruptionBudgets
// respected: exk8s-drain-node.sh), for at most the upgrade's
// drain_timeout_seconds: every worker not at the pass's version (split)
// is told that bound in the answers to its health reports from the
// upgrade's start (store.upgradeDrain holds the same rule), long before it
// is retired. No Node is left cordoned by a failure: a worker is cordoned
// only as it goes. A new worker that fails pauses the upgrade naming it.
func (s *Service) workerPools(ctx context.Context, r *run, deadline time.Time) error {
	m, err := s.Store.MembersOf(ctx, []int64{r.c.ID})
	if err != nil {
		return usecase.Recorded(err)
	}
	for _, p := range m.Pools {
		if err := s.movePool(ctx, r, p, poolWorkers(m.Nodes, p.ID), deadline); err != nil {
			return err
		}
	}
	return nil
}

// poolWorkers are the workers of pool that stay.
func poolWorkers(nodes []store.Node, pool int64) []store.Node {
	var out []store.Node
	for _, n := range live(nodes) {
		if n.PoolID == pool {
			out = append(out, n)
		}
	}
	return out
}

// movePool is one step of pool p's surge; nil once every worker is at
// the pass's version.
func (s *Service) movePool(ctx context.Context, r *run, p store.Pool, workers []store.Node, deadline time.Time) error {
	old, fresh := split(workers, r.u.PassVersion)
	surging := r.u.SurgePoolID != nil && *r.u.SurgePoolID == p.ID
	switch {
	case len(old) == 0 && !surging:
		return nil
	case p.State != store.PoolActive:
		return engine.Wait(fmt.Sprintf("node pool %s is %s", p.Name, p.State))
	case !surging:
		k := min(r.u.Surge, len(old))
		if err := s.record(ctx, r, func(u *store.Upgrade) { u.SurgePoolID, u.SurgeBase, u.SurgeCount = &p.ID, p.Count, k }); err != nil {
			return err
		}
		return s.surge(ctx, r, p, deadline)
	case p.Count == r.u.SurgeBase:
		return s.surge(ctx, r, p, deadline)
	}
	if err := newWorkersReady(fresh); err != nil {
		return err
	}
	return s.retireOld(ctx, r, p, old)
}

// split is workers at version and not: the old ones are those the pass
// retires (and whose health answers carry its drain bound,
// store.upgradeDrain).
func split(workers []store.Node, version string) (old, fresh []store.Node) {
	for _, n := range workers {
		if n.KubernetesVersion == version {
			fresh = append(fresh, n)
		} else {
			old = append(old, n)
		}
	}
	return old, fresh
}

// newWorkersReady waits for the new workers; one that failed pauses the
// upgrade naming it.
func newWorkersReady(fresh []store.Node) error {
	for _, n := range fresh {
		switch {
		case n.Phase == "failed":
			return &paused{node: n.Name, reason: fmt.Sprintf("health gate: the new worker %s failed: %s", n.Name, n.PhaseMessage)}
		case n.VMID == 0 || !ready(n):
			return engine.Wait("the new worker " + n.Name + " is not ready yet")
		}
	}
	return nil
}

// surge scales p up by the recorded count; the pools' kind makes the new
// workers' VMs.
func (s *Service) surge(ctx context.Context, r *run, p store.Pool, deadline time.Time) error {
	if err := s.InTime(deadline); err != nil {
		return err
	}
	p.Count = r.u.SurgeBase + r.u.SurgeCount
	_, err := s.Store.BeginPoolOperation(ctx, s.poolChange(r, p))
	if err != nil && !errors.Is(err, store.ErrLeaseLost) { // lost: another operation of the pool began; looked at again
		return usecase.Recorded(err)
	}
	return engine.Wait(fmt.Sprintf("node pool %s surges by %d workers at %s", p.Name, r.u.SurgeCount, r.u.PassVersion))
}

// retireOld retires as many old workers as the surge added (the oldest
// first), sets the pool's count back and ends the surge, at once.
func (s *Service) retireOld(ctx context.Context, r *run, p store.Pool, old []store.Node) error {
	var ordinals []int
	for _, n := range old[:min(r.u.SurgeCount, len(old))] {
		ordinals = append(ordinals, n.Ordinal)
	}
	p.Count = r.u.SurgeBase
	_, err := s.Store.RetirePoolWorkers(ctx, s.poolChange(r, p), ordinals, r.u.ID, r.lease.Owner)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		return engine.Wait("node pool " + p.Name + " is busy")
	case err != nil:
		return usecase.Recorded(err)
	}
	r.u.SurgePoolID, r.u.SurgeBase, r.u.SurgeCount = nil, 0, 0
	return engine.Wait(fmt.Sprintf("node pool %s retires %d old workers", p.Name, len(ordinals)))
}

// poolChange is the pool operation moving p to its count, under a lease
// of its own that has run out at once: the pools' kind claims and drives
// it (the upgrade's lease names the upgrade's operation alone).
func (s *Service) poolChange(r *run, p store.Pool) store.PoolChange {
	lease := s.RequestLease()
	lease.Until = s.Clock()
	return store.PoolChange{OrgID: r.c.OrgID, Pool: p, State: store.PoolScaling, From: []string{store.PoolActive},
		Lease: lease, Now: s.Clock(),
		Name: func(ordinal int) string { return clusterspec.WorkerName(p.Name, ordinal, r.c.ID) }}
}
