package controlplane

import (
	"context"
	"fmt"
	"time"

	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Before a control-plane node's VM is deleted (a replacement's old node,
// a shrink's leaving member), the control-plane name is moved off it
// when it points there, and the VM goes only once the TTL of the record
// written then has passed: no client of the name (kubectl, kube-proxy,
// the kubelets, the workers' bootstrap) still resolves to an address
// where nothing answers. Deleting first left the name on a dead node
// until the retirement re-pointed it (seen on booted nodes in the
// rolling upgrade: 40 s of API timeouts at each endpoint it replaced).

// nameOff moves c's control-plane name off gone when it points there: to
// to, or with to zero to the endpoint among the live control-plane nodes
// (live: nil reads them); then waits out the record's TTL since the move.
// A replacement names its new node, ready and staying: the next nodes an
// upgrade replaces are the old ones, so the name moves once per upgrade,
// not once per node. A name the DNS API does not hold (dns_configured
// false) or a refused move is not waited on: the VM goes.
func (s *Service) nameOff(ctx context.Context, c *store.Cluster, gone, to store.Node, live []store.Node) error {
	if c.DNSConfigured && c.Endpoint.VMID == gone.VMID {
		if live == nil {
			nodes, err := s.Store.ClusterNodes(ctx, c.ID)
			if err != nil {
				return usecase.DatabaseError(err)
			}
			live = LiveControlPlane(nodes)
		}
		if to.VMID == 0 {
			to, _ = EndpointOf(c, live)
		}
		if to.VMID != 0 && to.IPv4 != "" {
			_ = s.PointAt(ctx, c, live, to) // best effort: a refusal is recorded, and the VM goes
		}
	}
	return s.awaitNameMoved(c, gone)
}

// awaitNameMoved waits while the name's last move off a node is younger
// than the TTL of the record it wrote.
func (s *Service) awaitNameMoved(c *store.Cluster, gone store.Node) error {
	e := c.Endpoint
	if e.MovedAt == nil || e.VMID == gone.VMID {
		return nil
	}
	until := e.MovedAt.Add(time.Duration(e.TTLSeconds) * time.Second)
	if !s.Clock().Before(until) {
		return nil
	}
	return engine.Wait(fmt.Sprintf("the control-plane name moved off %s; its VM is deleted from %s, when no client's DNS cache holds its address",
		gone.Name, until.UTC().Format(time.RFC3339)))
}
