package nodebootstrap

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/store"
)

// The etcd membership route (docs/SCALE-CONTROL-PLANE.md, "Shrinking"):
// while a scaling shrinks a cluster's control plane, the member that stays
// and removes (the lowest-ordinal ready control-plane node that is not
// retiring, as the snapshot node is chosen) asks every minute
// (exk8s-etcd-membership.timer) which members to remove, removes each
// from etcd and reports it. The leaving node is never the one asked: a
// dead one could not remove itself, and a live one is not trusted to
// report its own removal. The route opens no key.

// Memberships reads and records what the route serves.
type Memberships interface {
	EtcdMembershipOf(ctx context.Context, vmID, orgID int64) (store.EtcdMembership, error)
	RecordEtcdRemoval(ctx context.Context, clusterID, reporter int64, name string) error
}

var _ Memberships = (*store.Store)(nil)

// EtcdRemovals is the GET's answer: the members the asking node removes.
type EtcdRemovals struct {
	ClusterID int64         `json:"cluster_id"`
	Remove    []EtcdRemoval `json:"remove"`
}

// EtcdRemoval is one member to remove, by its etcd name (the node's name,
// etcd's --name).
type EtcdRemoval struct {
	Name string `json:"name"`
}

// EtcdRemovalReport is the POST's body (name) and answer (with the
// cluster).
type EtcdRemovalReport struct {
	ClusterID int64  `json:"cluster_id,omitempty"`
	Name      string `json:"name"`
}

// EtcdRemovals is what vm is to remove from its cluster's etcd: nil (the
// route's 204) unless vm is the removing member of a cluster a scaling
// shrinks and a leaving member's removal is not reported yet.
func (s *Service) EtcdRemovals(ctx context.Context, vm auth.BootstrapVM) (*EtcdRemovals, error) {
	m, err := s.membership(ctx, vm)
	if err != nil {
		return nil, err
	}
	out := EtcdRemovals{ClusterID: m.ClusterID, Remove: removalsBy(m, vm.VMID)}
	if len(out.Remove) == 0 {
		return nil, nil
	}
	return &out, nil
}

// ReportEtcdRemoval records that vm removed r's member: only from the
// removing member, only for a member it was answered (404 otherwise,
// nothing written).
func (s *Service) ReportEtcdRemoval(ctx context.Context, vm auth.BootstrapVM, r EtcdRemovalReport) (EtcdRemovalReport, error) {
	if r.Name == "" {
		return r, apperr.InvalidField.Detail("name: is required, the member's name as GET .../etcd-membership answered it")
	}
	m, err := s.membership(ctx, vm)
	if err != nil {
		return r, err
	}
	if !answered(removalsBy(m, vm.VMID), r.Name) {
		return r, notFound("member this node was asked to remove")
	}
	if err := s.Memberships.RecordEtcdRemoval(ctx, m.ClusterID, vm.VMID, r.Name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return r, notFound("member this node was asked to remove")
		}
		return r, databaseError(err)
	}
	r.ClusterID = m.ClusterID
	return r, nil
}

func (s *Service) membership(ctx context.Context, vm auth.BootstrapVM) (store.EtcdMembership, error) {
	m, err := s.Memberships.EtcdMembershipOf(ctx, vm.VMID, vm.OrgID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return m, notFound("control-plane node of an active cluster")
	case err != nil:
		return m, databaseError(err)
	}
	return m, nil
}

// removalsBy are the members vmID is to remove: the leaving members whose
// removal is not reported, while a scaling is live and vmID is the
// removing member; none otherwise.
func removalsBy(m store.EtcdMembership, vmID int64) []EtcdRemoval {
	if !m.Scaling || RemovingMember(m.Members).VMID != vmID {
		return nil
	}
	var out []EtcdRemoval
	for _, e := range m.Members {
		if e.Retiring && e.RemovedAt == nil {
			out = append(out, EtcdRemoval{Name: e.Name})
		}
	}
	return out
}

// RemovingMember is the member that removes the leaving ones: the
// lowest-ordinal ready one with a VM, not retiring (controlplane's
// RemovingMember, over the route's rows); the zero member when none is.
func RemovingMember(members []store.EtcdMember) store.EtcdMember {
	var best store.EtcdMember
	for _, e := range members {
		if e.Ready && e.VMID != 0 && !e.Retiring && (best.VMID == 0 || e.Ordinal < best.Ordinal) {
			best = e
		}
	}
	return best
}

func answered(list []EtcdRemoval, name string) bool {
	for _, r := range list {
		if r.Name == name {
			return true
		}
	}
	return false
}
