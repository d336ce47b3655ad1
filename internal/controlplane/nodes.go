package controlplane

import (
	"context"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	engine "github.com/excloud/k8sapi/internal/operation"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// NodeOp is an operation that makes control-plane nodes (a founding,
// a replacement) as its driver (the API function or the
// reconciler) sees it: the committed rows, updated as each side effect is
// recorded, the lease that fences every write, and the opened trust.
type NodeOp struct {
	Cluster store.Cluster
	Nodes   []store.Node
	Spec    clusterspec.Spec
	Lease   store.Lease
	Trust   *pki.Trust
	DataKey *envelope.DataKey
}

// Service makes, replaces and points at the control-plane nodes of an
// org's clusters (the founding's, then each replacement's).
type Service struct{ *usecase.Deps }

func (s *Service) vms() vm.Maker { return vm.Maker{Deps: s.Deps} }

// NodeSteps make an operation's control-plane nodes (a founding's, a
// replacement's new one): their VMs, their addresses, their identities
// issued from the cert table for their names and addresses.
func (s *Service) NodeSteps() []engine.Step[*NodeOp] {
	return []engine.Step[*NodeOp]{
		{Name: "VMs", Run: func(ctx context.Context, op *NodeOp, d time.Time) error {
			return s.vms().EnsureVMs(ctx, s.vmSet(op), d)
		}},
		{Name: "addresses", Run: func(ctx context.Context, op *NodeOp, d time.Time) error {
			return s.vms().EnsureAddresses(ctx, s.vmSet(op), d)
		}},
		{Name: "node identities", Run: s.ensureIdentities},
	}
}

// vmSet is op's nodes as a vm.Set, fenced by the cluster's lease.
func (s *Service) vmSet(op *NodeOp) vm.Set {
	return vm.Set{Nodes: op.Nodes, Fence: store.ClusterLease(op.Cluster.ID, op.Lease.Owner),
		Create: func(ctx context.Context, n store.Node) (int64, error) {
			return s.vms().Create(ctx, &op.Cluster, n, nil)
		}}
}

// ensureIdentities issues, seals and records the stored identities (the
// cert table's PhaseFounding entries) of every node that has none, in one
// statement whatever their number.
func (s *Service) ensureIdentities(ctx context.Context, op *NodeOp, _ time.Time) error {
	todo := vm.NodesWithout(op.Nodes, func(n store.Node) bool { return n.Issued })
	if len(todo) == 0 {
		return nil
	}
	sealed := make([]store.Node, 0, len(todo))
	for _, i := range todo {
		n, err := s.issueNode(op, op.Nodes[i])
		if err != nil {
			return err
		}
		sealed = append(sealed, n)
	}
	if err := usecase.Recorded(s.Store.RecordIdentities(ctx, op.Cluster.ID, op.Lease.Owner, sealed)); err != nil {
		return err
	}
	for _, i := range todo {
		op.Nodes[i].Issued = true
	}
	return nil
}

// issueNode issues node n's stored identities and seals their keys, into a
// copy of n: the sealed keys are not kept past the write.
func (s *Service) issueNode(op *NodeOp, n store.Node) (store.Node, error) {
	cluster, self, err := clusterfacts.FromRows(&op.Cluster, []store.Node{n})
	if err != nil {
		return n, err
	}
	subject, err := cluster.CertSubject(self[0])
	if err != nil {
		return n, err
	}
	issued, err := s.Issuer(op.Spec.KeyAlgorithm).IssuePhase(op.Trust, pki.PhaseFounding, subject)
	if err != nil {
		return n, err
	}
	n.Identities, err = keyring.SealIdentities(op.DataKey, n.VMID, issued)
	for _, kp := range issued {
		clear(kp.KeyPEM)
	}
	return n, err
}

// PointDNS points the control-plane name at the cluster's endpoint among
// nodes (EndpointOf: the recorded one while it is live, else the lowest
// ordinal) and records the outcome.
func (s *Service) PointDNS(ctx context.Context, c *store.Cluster, nodes []store.Node) {
	if to, ok := EndpointOf(c, nodes); ok {
		_ = s.PointAt(ctx, c, nodes, to) // best effort: the outcome is recorded for the operator
	}
}

// PointAt points the control-plane name at node to alone (the platform's
// DNS API holds one value per name), its address by the records' rule
// among nodes, and records the outcome: the node and, when it is another
// than recorded, the move's time and TTL (store.SetDNS). The DNS API's
// refusal is returned, and recorded as dns_configured false.
func (s *Service) PointAt(ctx context.Context, c *store.Cluster, nodes []store.Node, to store.Node) error {
	peers := make([]clusterfacts.Node, 0, len(nodes))
	for _, n := range nodes {
		peers = append(peers, clusterfacts.NodeOf(n))
	}
	rec, _ := clusterfacts.EndpointRecord(c.ControlPlaneDNSName, peers, clusterfacts.NodeOf(to), s.DNSTTL()) // EndpointOf chose a node with an address
	err := s.DNS.UpsertA(ctx, s.Settings.BaseDNSDomain, c.ControlPlaneDNSName, rec.Value, rec.TTL)
	c.DNSConfigured, c.DNSError = err == nil, ""
	if err != nil {
		c.DNSError = "the DNS API did not accept the control-plane record; create the suggested records by hand"
		s.Logger().WarnContext(ctx, "dns configuration failed", "cluster_id", c.ID, "vm_id", to.VMID, "cause", err.Error())
	}
	s.recordEndpoint(ctx, c, store.DNSOutcome{Configured: err == nil, Error: c.DNSError, VMID: to.VMID, TTLSeconds: rec.TTL, At: s.Clock()})
	return err
}

// recordEndpoint records outcome o of pointing c's name, in c too.
func (s *Service) recordEndpoint(ctx context.Context, c *store.Cluster, o store.DNSOutcome) {
	if err := s.Store.SetDNS(ctx, c.ID, o); err != nil {
		s.Logger().WarnContext(ctx, "recording dns outcome failed", "cluster_id", c.ID, "cause", err.Error())
		return
	}
	if c.Endpoint.VMID != o.VMID {
		c.Endpoint.MovedAt, c.Endpoint.TTLSeconds = &o.At, o.TTLSeconds
	}
	if o.Configured {
		c.Endpoint.VMID = o.VMID
	}
}

// EndpointOf is the node among nodes the control-plane name is to point
// at: the recorded endpoint while it is live (not retiring, with a VM and
// an address), else the lowest-ordinal such node (what the name pointed at
// before the endpoint was recorded); false: none is.
func EndpointOf(c *store.Cluster, nodes []store.Node) (store.Node, bool) {
	// One pass over nodes, copying none: a page of clusters asks this of
	// every cluster, and filtering copies of the large Node rows first was
	// a tenth of the page's CPU.
	var lowest *store.Node
	for i := range nodes {
		n := &nodes[i]
		if !canBeEndpoint(n) {
			continue
		}
		if n.VMID == c.Endpoint.VMID {
			return *n, true
		}
		if lowest == nil || n.Ordinal < lowest.Ordinal {
			lowest = n
		}
	}
	if lowest == nil {
		return store.Node{}, false
	}
	return *lowest, true
}

// canBeEndpoint says n is a live control-plane node with a VM and an
// address: one the control-plane name can point at.
func canBeEndpoint(n *store.Node) bool {
	return isLiveControlPlane(n) && n.VMID != 0 && n.IPv4 != ""
}

// Open reads op's spec and opens its cluster's trust, which issuing a
// node's identities needs.
func (s *Service) Open(ctx context.Context, op *NodeOp) error {
	spec, err := clusterspec.Of(&op.Cluster)
	if err != nil {
		return err
	}
	opened, err := keyring.Open(ctx, s.Envelope, &op.Cluster)
	if err != nil {
		return usecase.KMSError(err)
	}
	op.Spec, op.Trust, op.DataKey = spec, opened.Trust, opened.DataKey
	return nil
}

// SuggestedRecords are the control-plane name's records by the one rule
// (clusterfacts.ControlPlaneRecords), which founding also creates from.
func SuggestedRecords(dnsName string, nodes []store.Node) []apitypes.DNSRecord {
	peers := []clusterfacts.Node{}
	for _, n := range nodes {
		if n.IPv4 != "" { // a founding still going on may not know every address yet
			peers = append(peers, clusterfacts.NodeOf(n))
		}
	}
	return clusterfacts.ControlPlaneRecords(dnsName, peers)
}

// ControlPlaneOf is the control-plane nodes among nodes.
func ControlPlaneOf(nodes []store.Node) []store.Node {
	return nodesWhere(nodes, func(n *store.Node) bool { return n.Role != store.RoleWorker })
}

// LiveControlPlane is the control-plane nodes that are not retiring.
func LiveControlPlane(nodes []store.Node) []store.Node {
	return nodesWhere(nodes, isLiveControlPlane)
}

func isLiveControlPlane(n *store.Node) bool { return n.Role != store.RoleWorker && !n.Retiring }

// nodesWhere is the nodes that keep says so of, in order, copied into one
// allocation of their number: a Node is a large row, and growing the copy
// by appends re-copied it several times for every cluster of a page.
func nodesWhere(nodes []store.Node, keep func(*store.Node) bool) []store.Node {
	n := 0
	for i := range nodes {
		if keep(&nodes[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]store.Node, 0, n)
	for i := range nodes {
		if keep(&nodes[i]) {
			out = append(out, nodes[i])
		}
	}
	return out
}
