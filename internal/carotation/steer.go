package carotation

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/store"
)

// steer moves the control-plane name off its endpoint node once that node
// is the one live control-plane node left to apply the phase: to the
// lowest-ordinal other that applied it and reports no failing check. The
// node is asked to restart only once the name is off it and the record's
// TTL has passed (store.rotationAsks), so no client of the name meets its
// restarting API server. Not steered: a single control-plane node (no
// node to move to; its phase is downtime at the endpoint), and a cluster
// whose name the DNS API does not hold (dns_configured false). A refused
// move is logged and recorded by PointAt (dns_configured false, the try's
// time as the move's): the endpoint stays, and the node is asked anyway
// once the TTL has passed.
func (s *Service) steer(ctx context.Context, r *rotating, nodes []store.Node) {
	if !r.c.DNSConfigured {
		return
	}
	cp := controlplane.LiveControlPlane(counted(nodes))
	at, ok := controlplane.EndpointOf(&r.c, cp)
	if !ok || r.row.AppliedBy(at.CAPhase) {
		return
	}
	others := slices.DeleteFunc(cp, func(n store.Node) bool { return n.VMID == at.VMID })
	if len(others) == 0 || slices.ContainsFunc(others, func(n store.Node) bool { return !s.done(r, n) }) {
		return
	}
	to := slices.IndexFunc(others, func(n store.Node) bool { return n.IPv4 != "" })
	if to < 0 {
		return
	}
	if err := (&controlplane.Service{Deps: s.Deps}).PointAt(ctx, &r.c, nodes, others[to]); err == nil {
		s.Logger().InfoContext(ctx, "control-plane name moved off the node the CA rotation restarts next", "cluster_id", r.c.ID,
			"from_vm_id", at.VMID, "to_vm_id", others[to].VMID, "phase", r.row.Phase)
	}
}

// done says whether control-plane node n applied the rotation's phase and
// reports no failing check: the name may point at it.
func (s *Service) done(r *rotating, n store.Node) bool {
	return r.row.AppliedBy(n.CAPhase) && n.Health.FailingSince == nil
}

// steering is what the hold adds while the name's move off a node has
// to outlive the TTL of the record written with it: when the node is
// asked.
func (s *Service) steering(r *rotating) string {
	e := r.c.Endpoint
	if e.MovedAt == nil {
		return ""
	}
	until := e.MovedAt.Add(time.Duration(e.TTLSeconds) * time.Second)
	if !s.Clock().Before(until) {
		return ""
	}
	return fmt.Sprintf("; the control-plane name moved to another node at %s, and the node it left is asked to restart from %s, when no client's DNS cache holds its address",
		e.MovedAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
}
