package founding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/store"
)

// operation is one founding as its driver (the API function or the
// reconciler) sees it: the committed rows, updated as each side effect is
// recorded, the lease that fences every write, and the opened trust.
type operation struct {
	cluster store.Cluster
	nodes   []store.Node
	spec    Spec
	lease   store.Lease
	trust   *pki.Trust
	dataKey *envelope.DataKey
}

// step is one step of an operation (a founding's, a pool's, a
// replacement's) as a table row: its name and the Service's method that
// runs it. Every step is idempotent over the recorded state (see package
// operation); stepsOf binds a table to a Service for the engine.
type step[O any] struct {
	name string
	run  func(s *Service, ctx context.Context, op O, deadline time.Time) error
}

// stepsOf is the table steps bound to s, as the engine runs them.
func stepsOf[O any](s *Service, steps []step[O]) []engine.Step[O] {
	out := make([]engine.Step[O], len(steps))
	for i, st := range steps {
		out[i] = engine.Step[O]{Name: st.name, Run: func(ctx context.Context, op O, d time.Time) error {
			return st.run(s, ctx, op, d)
		}}
	}
	return out
}

// foundingSteps is the order of a founding, the truth both drivers
// follow: its security group, then its nodes, then the cluster goes active.
func foundingSteps() []step[*operation] {
	steps := []step[*operation]{{"security group", (*Service).ensureSecurityGroup}}
	steps = append(steps, nodeSteps()...)
	return append(steps, step[*operation]{"activation", (*Service).activate})
}

// nodeSteps make an operation's control-plane nodes (a founding's, a
// replacement's new one): their VMs, their addresses, their identities
// issued from the cert table for their names and addresses.
func nodeSteps() []step[*operation] {
	return []step[*operation]{
		{"VMs", func(s *Service, ctx context.Context, op *operation, d time.Time) error {
			return s.ensureVMs(ctx, op.vms(s), d)
		}},
		{"addresses", func(s *Service, ctx context.Context, op *operation, d time.Time) error {
			return s.ensureAddresses(ctx, op.vms(s), d)
		}},
		{"node identities", (*Service).ensureIdentities},
	}
}

// stepsOn are steps over the operation another operation O holds.
func stepsOn[O any](steps []step[*operation], of func(O) *operation) []step[O] {
	out := make([]step[O], len(steps))
	for i, st := range steps {
		out[i] = step[O]{st.name, func(s *Service, ctx context.Context, o O, d time.Time) error {
			return st.run(s, ctx, of(o), d)
		}}
	}
	return out
}

// inTime is checked before each remote side effect.
func (s *Service) inTime(deadline time.Time) error {
	return engine.InTime(s.now(), deadline)
}

// recorded maps a failure to record a side effect to its answer: a lost
// lease stops the driver, anything else is the database.
func recorded(err error) error {
	if err == nil || errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	return databaseError(err)
}

// ensureSecurityGroup uses the operator's groups, or creates one that
// allows all traffic from the subnet and the API server port from anywhere.
func (s *Service) ensureSecurityGroup(ctx context.Context, op *operation, deadline time.Time) error {
	if len(op.spec.SecurityGroupIDs) > 0 || op.cluster.CreatedSecurityGroupID != nil {
		return nil
	}
	if err := s.inTime(deadline); err != nil {
		return err
	}
	subnet, err := s.subnet(ctx, op.spec.SubnetID)
	if err != nil {
		return err
	}
	sgID, err := s.createSecurityGroup(ctx, op)
	if err != nil {
		return err
	}
	for i, r := range groupRules(sgID, subnet.CIDRv4) {
		r.IdempotencyToken = tokenFor(&op.cluster, fmt.Sprintf("sg-rule-%d", i+1))
		if _, err := s.Compute.CreateSecurityGroupRule(ctx, r); err != nil {
			return computeError("creating a security group rule", err)
		}
	}
	if err := recorded(s.Store.RecordSecurityGroup(ctx, op.cluster.ID, op.lease.Owner, sgID)); err != nil {
		return err
	}
	op.cluster.CreatedSecurityGroupID, op.cluster.SecurityGroupIDs = &sgID, []int64{sgID}
	return nil
}

// subnet looks the subnet up; an unknown one is bad input.
func (s *Service) subnet(ctx context.Context, id int64) (compute.Subnet, error) {
	subnet, err := s.Compute.Subnet(ctx, id)
	return subnet, refError(err, "subnet_id: no such subnet", "looking up the subnet")
}

// platformRefs are what a request names of the compute API's (a subnet,
// an image, an instance type), with the request's field of each.
type platformRefs struct {
	subnetID, imageID             int64
	instanceType                  string
	imageField, instanceTypeField string
}

// refsOf is what POST /clusters names.
func refsOf(spec Spec) platformRefs {
	return platformRefs{subnetID: spec.SubnetID, imageID: spec.ControlPlaneImageID, instanceType: spec.ControlPlaneInstanceType,
		imageField: "control_plane_image_id", instanceTypeField: "control_plane_instance_type"}
}

// checkPlatformRefs: the subnet, image and instance type a request names
// exist, asked of the compute API, which owns them.
func (s *Service) checkPlatformRefs(ctx context.Context, refs platformRefs) error {
	if _, err := s.subnet(ctx, refs.subnetID); err != nil {
		return err
	}
	_, err := s.Compute.Image(ctx, refs.imageID)
	if err := refError(err, refs.imageField+": no such image", "looking up the image"); err != nil {
		return err
	}
	_, err = s.Compute.InstanceType(ctx, refs.instanceType)
	return refError(err, refs.instanceTypeField+": no such instance type", "looking up the instance type")
}

// refError is a lookup's failure: the platform's 404 is the client's bad
// input, any other failure the platform's.
func refError(err error, unknown, doing string) error {
	if compute.IsNotFound(err) {
		return apperr.InvalidRequest.Detail(unknown)
	}
	if err != nil {
		return computeError(doing, err)
	}
	return nil
}

// createSecurityGroup records that the create is sent, then sends it under
// the cluster's token for its group.
func (s *Service) createSecurityGroup(ctx context.Context, op *operation) (int64, error) {
	if err := recorded(s.Store.MarkSecurityGroupRequested(ctx, op.cluster.ID, op.lease.Owner)); err != nil {
		return 0, err
	}
	op.cluster.SecurityGroupRequested = true
	id, err := s.Compute.CreateSecurityGroup(ctx, securityGroupOf(&op.cluster))
	if err != nil {
		return 0, computeError("creating the security group", err)
	}
	return id, nil
}

func securityGroupOf(c *store.Cluster) compute.SecurityGroup {
	return compute.SecurityGroup{Name: c.Name + "-control-plane", Description: "k8sapi control plane of " + c.Name,
		IdempotencyToken: tokenFor(c, "sg")}
}

// groupRules are the rules of the group founding creates.
func groupRules(sgID int64, subnetCIDR string) []compute.Rule {
	return []compute.Rule{
		{SecurityGroupID: sgID, IsIngress: true, Protocol: compute.ProtocolAny, PortRange: compute.PortRangeAny,
			CIDR: subnetCIDR, Description: "all IPv4 from the cluster subnet"},
		{SecurityGroupID: sgID, IsIngress: true, Protocol: compute.ProtocolTCPv4, PortRange: "6443",
			CIDR: "0.0.0.0/0", Description: "Kubernetes API"},
	}
}

// vmSet is the nodes an operation makes VMs for (a founding's control
// plane, a pool's workers), shared with the operation so what is recorded
// shows in it; the fence of its writes; and how one node's VM is created
// (a repeat of it answers the VM the first made).
type vmSet struct {
	nodes  []store.Node
	fence  store.Fence
	create func(ctx context.Context, n store.Node) (int64, error)
}

// vms is the founding's control-plane nodes as a vmSet.
func (op *operation) vms(s *Service) vmSet {
	return vmSet{nodes: op.nodes, fence: store.ClusterLease(op.cluster.ID, op.lease.Owner),
		create: func(ctx context.Context, n store.Node) (int64, error) { return s.createVM(ctx, &op.cluster, n) }}
}

// ensureVMs creates the VM of every node that has none recorded, each born
// with the userdata shim that later fetches its bundle. Its writes do not
// grow with the node count: every create is marked requested in one
// statement before the first is sent, and the VMs created are recorded in
// one after the last (or after the one that failed: those created before
// it are recorded, so an undo deletes them by id). A driver that dies in
// between leaves creates marked requested without a VM: the next driver
// repeats them under the same idempotency tokens, as after a lost answer.
func (s *Service) ensureVMs(ctx context.Context, set vmSet, deadline time.Time) error {
	todo := nodesWithout(set.nodes, func(n store.Node) bool { return n.VMID != 0 })
	if len(todo) == 0 {
		return nil
	}
	if err := s.inTime(deadline); err != nil {
		return err
	}
	if err := recorded(s.Store.MarkVMsRequested(ctx, set.fence, ordinalsOf(set.nodes, todo))); err != nil {
		return err
	}
	created, unsent, err := s.createVMs(ctx, set, todo, deadline)
	if len(created)+len(unsent) == 0 {
		return err
	}
	rerr := recorded(s.Store.RecordVMs(ctx, set.fence, created, unsent))
	// A failed create is the cause the caller hears; if its record failed
	// too, the undo finds the VMs by repeating their creates.
	return cmp.Or(err, rerr)
}

// createVMs sends the creates of set's nodes at indexes todo, in order,
// until one fails or time is up. It returns the VM of each created node by
// ordinal and the ordinals whose create was never sent.
func (s *Service) createVMs(ctx context.Context, set vmSet, todo []int, deadline time.Time) (map[int]int64, []int, error) {
	created := map[int]int64{}
	for k, i := range todo {
		n := &set.nodes[i]
		if err := s.inTime(deadline); err != nil {
			return created, unsentFrom(set.nodes, todo[k:]), err
		}
		n.CreateRequested = true
		id, err := set.create(ctx, *n)
		if err != nil {
			// This create may have reached the platform; the later ones did not.
			return created, unsentFrom(set.nodes, todo[k+1:]), err
		}
		n.VMID, created[n.Ordinal] = id, id
	}
	return created, nil, nil
}

// unsentFrom marks op's nodes at indexes as never requested and returns
// their ordinals.
func unsentFrom(nodes []store.Node, indexes []int) []int {
	for _, i := range indexes {
		nodes[i].CreateRequested = false
	}
	return ordinalsOf(nodes, indexes)
}

// nodesWithout is the indexes of the nodes that do not have what done
// says they have.
func nodesWithout(nodes []store.Node, done func(store.Node) bool) []int {
	var todo []int
	for i, n := range nodes {
		if !done(n) {
			todo = append(todo, i)
		}
	}
	return todo
}

// ordinalsOf is the ordinals of nodes at indexes.
func ordinalsOf(nodes []store.Node, indexes []int) []int {
	out := make([]int, len(indexes))
	for k, i := range indexes {
		out[k] = nodes[i].Ordinal
	}
	return out
}

// createVM sends the create of control-plane node n's VM under the node's
// token. Undoing repeats it to learn the id of a VM whose create answer
// was lost.
func (s *Service) createVM(ctx context.Context, c *store.Cluster, n store.Node) (int64, error) {
	spec, err := specOf(c)
	if err != nil {
		return 0, err
	}
	return s.sendCreate(ctx, compute.Instance{
		Name: n.Name, ZoneID: spec.ZoneID, SubnetID: spec.SubnetID,
		ImageID: spec.ControlPlaneImageID, InstanceType: spec.ControlPlaneInstanceType,
		AllocatePublicIPv4: spec.AllocatePublicIPv4, SSHPubkey: spec.SSHPubkey,
		SecurityGroupIDs: c.SecurityGroupIDs, RootVolumeSizeGiB: spec.RootVolumeSizeGiB,
		Tags:             map[string]string{"role": "control-plane", "k8sapi/cluster": c.Name},
		IdempotencyToken: tokenFor(c, controlPlanePurpose(n)),
	}, fmt.Sprintf("control-plane VM %d", n.Ordinal), bundle.UserdataInput{})
}

// controlPlanePurpose names node n's VM create for its token: a founding's
// node by its ordinal ("cp-2"), a replacement's by the replacement, whose
// id is never reused (a removed row's ordinal can be handed out again).
func controlPlanePurpose(n store.Node) string {
	if n.ReplacementID != 0 {
		return fmt.Sprintf("cp-replacement-%d", n.ReplacementID)
	}
	return fmt.Sprintf("cp-%d", n.Ordinal)
}

// sendCreate sends the create of VM inst, born with the userdata shim of
// its role (shim: BootstrapBaseURL is the settings').
func (s *Service) sendCreate(ctx context.Context, inst compute.Instance, what string, shim bundle.UserdataInput) (int64, error) {
	shim.BootstrapBaseURL = s.Settings.BootstrapBaseURL
	userdata, err := s.Renderer.Userdata(shim)
	if err != nil {
		return 0, fmt.Errorf("rendering userdata: %w", err)
	}
	inst.Userdata = userdata
	id, err := s.Compute.CreateInstance(ctx, inst)
	if err != nil {
		return 0, computeError("creating "+what, err)
	}
	return id, nil
}

// ensureAddresses waits for the addresses of every node that has none
// recorded, by bounded polling of the compute API (a real platform attaches
// interfaces after the create answered), and records them on the nodes in
// one statement (those found before a failure too).
func (s *Service) ensureAddresses(ctx context.Context, set vmSet, deadline time.Time) error {
	var found []store.Node
	var err error
	for _, i := range nodesWithout(set.nodes, func(n store.Node) bool { return n.IPv4 != "" }) {
		n := &set.nodes[i]
		var info compute.InstanceInfo
		if info, err = s.pollAddresses(ctx, n.VMID, deadline); err != nil {
			break
		}
		n.IPv4, n.IPv6, n.PublicIPv4 = info.IPv4, info.IPv6, info.PublicIPv4
		found = append(found, *n)
	}
	if len(found) > 0 {
		if rerr := recorded(s.Store.RecordAddresses(ctx, set.fence, found)); rerr != nil {
			return rerr
		}
	}
	return err
}

// pollAddresses reads VM vmID until it has a private IPv4 address, at most
// Settings.AddressPolls times.
func (s *Service) pollAddresses(ctx context.Context, vmID int64, deadline time.Time) (compute.InstanceInfo, error) {
	polls := orDefault(s.Settings.AddressPolls, DefaultAddressPolls)
	for range polls {
		if err := s.inTime(deadline); err != nil {
			return compute.InstanceInfo{}, err
		}
		info, err := s.Compute.GetInstance(ctx, vmID)
		if err != nil {
			return info, computeError(fmt.Sprintf("reading VM %d", vmID), err)
		}
		if info.IPv4 != "" {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(orDefault(s.Settings.AddressPollInterval, DefaultAddressPollInterval)):
		}
	}
	return compute.InstanceInfo{}, apperr.ComputeFailed.Detailf(
		"the compute API reported no address for VM %d after %d reads; nothing was kept", vmID, polls)
}

// ensureIdentities issues, seals and records the stored identities (the
// cert table's PhaseFounding entries) of every node that has none, in one
// statement whatever their number.
func (s *Service) ensureIdentities(ctx context.Context, op *operation, _ time.Time) error {
	todo := nodesWithout(op.nodes, func(n store.Node) bool { return n.Issued })
	if len(todo) == 0 {
		return nil
	}
	sealed := make([]store.Node, 0, len(todo))
	for _, i := range todo {
		n, err := s.issueNode(op, op.nodes[i])
		if err != nil {
			return err
		}
		sealed = append(sealed, n)
	}
	if err := recorded(s.Store.RecordIdentities(ctx, op.cluster.ID, op.lease.Owner, sealed)); err != nil {
		return err
	}
	for _, i := range todo {
		op.nodes[i].Issued = true
	}
	return nil
}

// issueNode issues node n's stored identities and seals their keys, into a
// copy of n: the sealed keys are not kept past the write.
func (s *Service) issueNode(op *operation, n store.Node) (store.Node, error) {
	cluster, self, err := clusterfacts.FromRows(&op.cluster, []store.Node{n})
	if err != nil {
		return n, err
	}
	subject, err := cluster.CertSubject(self[0])
	if err != nil {
		return n, err
	}
	issued, err := s.issuer(op.spec.KeyAlgorithm).IssuePhase(op.trust, pki.PhaseFounding, subject)
	if err != nil {
		return n, err
	}
	n.Identities, err = keyring.SealIdentities(op.dataKey, n.VMID, issued)
	for _, kp := range issued {
		clear(kp.KeyPEM)
	}
	return n, err
}

// activate makes the cluster active, then points its DNS name (best
// effort: the rows are the truth, a DNS failure is reported, never undone).
func (s *Service) activate(ctx context.Context, op *operation, _ time.Time) error {
	if err := recorded(s.Store.FinishFounding(ctx, op.cluster.ID, op.lease.Owner)); err != nil {
		return err
	}
	op.cluster.Status = store.StatusActive
	s.configureDNS(ctx, &op.cluster, op.nodes)
	return nil
}

// configureDNS points the control-plane name at the first of the suggested
// records and records the outcome.
func (s *Service) configureDNS(ctx context.Context, c *store.Cluster, nodes []store.Node) {
	first := suggestedRecords(c.ControlPlaneDNSName, nodes)[0] // every node has a private address
	err := s.DNS.UpsertA(ctx, s.Settings.BaseDNSDomain, c.ControlPlaneDNSName, first.Value, first.TTL)
	c.DNSConfigured, c.DNSError = err == nil, ""
	if err != nil {
		c.DNSError = "the DNS API did not accept the control-plane record; create the suggested records by hand"
		s.logger().WarnContext(ctx, "dns configuration failed", "cluster_id", c.ID, "cause", err.Error())
	}
	if err := s.Store.SetDNS(ctx, c.ID, c.DNSConfigured, c.DNSError); err != nil {
		s.logger().WarnContext(ctx, "recording dns outcome failed", "cluster_id", c.ID, "cause", err.Error())
	}
}
