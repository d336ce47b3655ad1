package progress

import (
	"context"
	"errors"
	"time"

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

// NodeBootstrap is one node's bootstrap as its operator sees it.
type NodeBootstrap struct {
	ClusterID int64              `json:"cluster_id"`
	VMID      int64              `json:"vm_id"`
	NodeName  string             `json:"node_name"`
	Phase     clusterfacts.Phase `json:"phase"`
	Message   string             `json:"message"`
	UpdatedAt time.Time          `json:"updated_at"`
	Window    WindowView         `json:"window"`
	Fetches   []store.Fetch      `json:"fetches"`
}

// WindowView is a node's bootstrap window as shown: when it opened, when it
// closes, and whether the node's bundle may be fetched now.
type WindowView struct {
	OpenedAt time.Time `json:"opened_at"`
	ClosesAt time.Time `json:"closes_at"`
	Open     bool      `json:"open"`
}

// Bootstrap returns the bootstrap of the node on vmID in org's cluster.
func (s *Nodes) Bootstrap(ctx context.Context, org auth.Principal, clusterID, vmID int64) (NodeBootstrap, error) {
	ref := store.NodeRef{OrgID: org.OrgID, ClusterID: clusterID, VMID: vmID}
	b, err := s.Store.NodeBootstrap(ctx, ref)
	if err != nil {
		return NodeBootstrap{}, nodeError(err)
	}
	w := Window{OpenedAt: b.BootstrapOpenedAt, ReadyAt: b.ReadyAt, Length: s.Window}
	fetches := b.Fetches
	if fetches == nil {
		fetches = []store.Fetch{}
	}
	phase := clusterfacts.Phase(b.Phase)
	return NodeBootstrap{ClusterID: clusterID, VMID: vmID, NodeName: b.NodeName, Phase: phase,
		Message: b.Message, UpdatedAt: b.UpdatedAt, Fetches: fetches,
		Window: WindowView{OpenedAt: w.OpenedAt, ClosesAt: w.ClosesAt(), Open: w.Open(phase, s.now())},
	}, nil
}

// Reopen starts the bootstrap of the node on vmID over (a rebuilt VM, a
// replaced disk, a failure dealt with): the node is pending again, its
// phases restart from there, and its window opens for another Window.
func (s *Nodes) Reopen(ctx context.Context, org auth.Principal, clusterID, vmID int64) (NodeBootstrap, error) {
	ref := store.NodeRef{OrgID: org.OrgID, ClusterID: clusterID, VMID: vmID}
	out, err := s.Store.ReopenBootstrap(ctx, ref, string(clusterfacts.Pending), s.now())
	switch {
	case err != nil:
		return NodeBootstrap{}, nodeError(err)
	case !out.Reopened:
		return NodeBootstrap{}, apperr.ClusterNotActive.Detail("the node's cluster is " + out.ClusterStatus)
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
