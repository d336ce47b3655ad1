package progress

import (
	"context"
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/store"
)

// NodeStore is the part of the store an operator's view and re-open of a
// node's bootstrap need.
type NodeStore interface {
	NodeBootstrap(ctx context.Context, ref store.NodeRef) (store.NodeBootstrap, error)
	ReopenBootstrap(ctx context.Context, ref store.NodeRef, pending string, at time.Time) (store.ReopenOutcome, error)
}

var _ NodeStore = (*store.Store)(nil)

// Nodes is the operator's side of a node's bootstrap: GET and re-open.
type Nodes struct {
	Store  NodeStore
	Window time.Duration
	Now    func() time.Time
}

// Bootstrap returns the bootstrap of the node on vmID in org's cluster.
func (s *Nodes) Bootstrap(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeBootstrapDetail, error) {
	ref := store.NodeRef{OrgID: org.OrgID, ClusterID: clusterID, VMID: vmID}
	b, err := s.Store.NodeBootstrap(ctx, ref)
	if err != nil {
		return apitypes.NodeBootstrapDetail{}, nodeError(err)
	}
	w := Window{OpenedAt: b.BootstrapOpenedAt, ReadyAt: b.ReadyAt, Length: s.Window}
	phase := clusterfacts.Phase(b.Phase)
	return apitypes.NodeBootstrapDetail{ClusterID: clusterID, VMID: vmID, NodeName: b.NodeName, Phase: b.Phase,
		Message: b.Message, UpdatedAt: b.UpdatedAt, Fetches: fetchesOf(b.Fetches),
		Window: apitypes.BootstrapWindow{OpenedAt: w.OpenedAt, ClosesAt: w.ClosesAt(), Open: w.Open(phase, s.now())},
	}, nil
}

// fetchesOf are a node's recorded fetches as shown: [] when none.
func fetchesOf(rows []store.Fetch) []apitypes.Fetch {
	out := make([]apitypes.Fetch, len(rows))
	for i, f := range rows {
		out[i] = apitypes.Fetch{VMID: f.VMID, RequestID: f.RequestID, Outcome: f.Outcome, FetchedAt: f.FetchedAt}
	}
	return out
}

// Reopen starts the bootstrap of the node on vmID over (a rebuilt VM, a
// replaced disk, a failure dealt with): the node is pending again, its
// phases restart from there, and its window opens for another Window.
func (s *Nodes) Reopen(ctx context.Context, org auth.Principal, clusterID, vmID int64) (apitypes.NodeBootstrapDetail, error) {
	ref := store.NodeRef{OrgID: org.OrgID, ClusterID: clusterID, VMID: vmID}
	out, err := s.Store.ReopenBootstrap(ctx, ref, string(clusterfacts.Pending), s.now())
	switch {
	case err != nil:
		return apitypes.NodeBootstrapDetail{}, nodeError(err)
	case !out.Reopened:
		return apitypes.NodeBootstrapDetail{}, apperr.ClusterNotActive.Detail("the node's cluster is " + out.ClusterStatus)
	}
	return s.Bootstrap(ctx, org, clusterID, vmID)
}

func nodeError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound.Detail("no such node in this cluster")
	}
	return apperr.DatabaseUnavailable.Wrap(err)
}

func (s *Nodes) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
