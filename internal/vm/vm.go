package vm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Maker makes and deletes the VMs of every role: a founding's and a
// replacement's control-plane nodes, a pool's workers.
type Maker struct{ *usecase.Deps }

// Set is the nodes an operation makes VMs for (a founding's control
// plane, a pool's workers), shared with the operation so what is recorded
// shows in it; the fence of its writes; and how one node's VM is created
// (a repeat of it answers the VM the first made).
type Set struct {
	Nodes  []store.Node
	Fence  store.Fence
	Create func(ctx context.Context, n store.Node) (int64, error)
}

// EnsureVMs creates the VM of every node that has none recorded, each born
// with the userdata shim that later fetches its bundle. Its writes do not
// grow with the node count: every create is marked requested in one
// statement before the first is sent, and the VMs created are recorded in
// one after the last (or after the one that failed: those created before
// it are recorded, so an undo deletes them by id). A driver that dies in
// between leaves creates marked requested without a VM: the next driver
// repeats them under the same idempotency tokens, as after a lost answer.
func (m Maker) EnsureVMs(ctx context.Context, set Set, deadline time.Time) error {
	todo := NodesWithout(set.Nodes, func(n store.Node) bool { return n.VMID != 0 })
	if len(todo) == 0 {
		return nil
	}
	if err := m.InTime(deadline); err != nil {
		return err
	}
	if err := usecase.Recorded(m.Store.MarkVMsRequested(ctx, set.Fence, OrdinalsOf(set.Nodes, todo))); err != nil {
		return err
	}
	created, unsent, err := m.createVMs(ctx, set, todo, deadline)
	if len(created)+len(unsent) == 0 {
		return err
	}
	rerr := usecase.Recorded(m.Store.RecordVMs(ctx, set.Fence, created, unsent))
	// A failed create is the cause the caller hears; if its record failed
	// too, the undo finds the VMs by repeating their creates.
	return cmp.Or(err, rerr)
}

// createVMs sends the creates of set's nodes at indexes todo, in order,
// until one fails or time is up. It returns the VM of each created node by
// ordinal and the ordinals whose create was never sent.
func (m Maker) createVMs(ctx context.Context, set Set, todo []int, deadline time.Time) (map[int]int64, []int, error) {
	created := map[int]int64{}
	for k, i := range todo {
		n := &set.Nodes[i]
		if err := m.InTime(deadline); err != nil {
			return created, unsentFrom(set.Nodes, todo[k:]), err
		}
		n.CreateRequested = true
		id, err := set.Create(ctx, *n)
		if err != nil {
			// This create may have reached the platform; the later ones did not.
			return created, unsentFrom(set.Nodes, todo[k+1:]), err
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
	return OrdinalsOf(nodes, indexes)
}

// NodesWithout is the indexes of the nodes that do not have what done
// says they have.
func NodesWithout(nodes []store.Node, done func(store.Node) bool) []int {
	var todo []int
	for i, n := range nodes {
		if !done(n) {
			todo = append(todo, i)
		}
	}
	return todo
}

// OrdinalsOf is the ordinals of nodes at indexes.
func OrdinalsOf(nodes []store.Node, indexes []int) []int {
	out := make([]int, len(indexes))
	for k, i := range indexes {
		out[k] = nodes[i].Ordinal
	}
	return out
}

// Create sends the create of node n's VM, for any role: a control-plane
// node's from the cluster's founding spec, a worker's from its pool p
// (zone, key, volume and groups are the cluster's). The token is the
// node's own, so a repeat answers the VM the first create made. Undoing
// repeats it to learn the id of a VM whose create answer was lost.
func (m Maker) Create(ctx context.Context, c *store.Cluster, n store.Node, p *store.Pool) (int64, error) {
	inst, what, shim, err := instanceOf(c, n, p)
	if err != nil {
		return 0, err
	}
	return m.sendCreate(ctx, inst, what, shim)
}

// instanceOf is the VM of node n of cluster c (p: its pool, for a worker),
// what it is called in errors and the userdata shim of its role.
func instanceOf(c *store.Cluster, n store.Node, p *store.Pool) (compute.Instance, string, bundle.UserdataInput, error) {
	spec, err := clusterspec.Of(c)
	if err != nil {
		return compute.Instance{}, "", bundle.UserdataInput{}, err
	}
	inst := compute.Instance{
		Name: n.Name, ZoneID: spec.ZoneID, SubnetID: spec.SubnetID,
		ImageID: spec.ControlPlaneImageID, InstanceType: spec.ControlPlaneInstanceType,
		AllocatePublicIPv4: spec.AllocatePublicIPv4, SSHPubkey: spec.SSHPubkey,
		SecurityGroupIDs: c.SecurityGroupIDs, RootVolumeSizeGiB: spec.RootVolumeSizeGiB,
		Tags:             map[string]string{"role": "control-plane", "k8sapi/cluster": c.Name},
		IdempotencyToken: Token(c, controlPlanePurpose(n)),
	}
	if n.Role != store.RoleWorker {
		return inst, fmt.Sprintf("control-plane VM %d", n.Ordinal), bundle.UserdataInput{}, nil
	}
	// A worker's token derives from its row's id, never reused, so a
	// worker that replaces a removed one is never answered the removed
	// one's VM.
	inst.SubnetID, inst.ImageID, inst.InstanceType = p.SubnetID, p.ImageID, p.InstanceType
	inst.Tags = map[string]string{"role": "worker", "k8sapi/cluster": c.Name, "k8sapi/node-pool": p.Name}
	inst.IdempotencyToken = Token(c, fmt.Sprintf("worker-%d", n.ID))
	return inst, fmt.Sprintf("worker VM %d of node pool %s", n.Ordinal, p.Name), bundle.UserdataInput{Worker: true}, nil
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
func (m Maker) sendCreate(ctx context.Context, inst compute.Instance, what string, shim bundle.UserdataInput) (int64, error) {
	shim.BootstrapBaseURL = m.Settings.BootstrapBaseURL
	userdata, err := m.Renderer.Userdata(shim)
	if err != nil {
		return 0, fmt.Errorf("rendering userdata: %w", err)
	}
	inst.Userdata = userdata
	id, err := m.Compute.CreateInstance(ctx, inst)
	if err != nil {
		return 0, usecase.ComputeError("creating "+what, err)
	}
	return id, nil
}

// EnsureAddresses waits for the addresses of every node that has none
// recorded, by bounded polling of the compute API (a real platform attaches
// interfaces after the create answered), and records them on the nodes in
// one statement (those found before a failure too).
func (m Maker) EnsureAddresses(ctx context.Context, set Set, deadline time.Time) error {
	var found []store.Node
	var err error
	for _, i := range NodesWithout(set.Nodes, func(n store.Node) bool { return n.IPv4 != "" }) {
		n := &set.Nodes[i]
		var info compute.InstanceInfo
		if info, err = m.pollAddresses(ctx, n.VMID, deadline); err != nil {
			break
		}
		n.IPv4, n.IPv6, n.PublicIPv4 = info.IPv4, info.IPv6, info.PublicIPv4
		found = append(found, *n)
	}
	if len(found) > 0 {
		if rerr := usecase.Recorded(m.Store.RecordAddresses(ctx, set.Fence, found)); rerr != nil {
			return rerr
		}
	}
	return err
}

// pollAddresses reads VM vmID until it has a private IPv4 address, at most
// Settings.AddressPolls times.
func (m Maker) pollAddresses(ctx context.Context, vmID int64, deadline time.Time) (compute.InstanceInfo, error) {
	polls := cmp.Or(m.Settings.AddressPolls, usecase.DefaultAddressPolls)
	for range polls {
		if err := m.InTime(deadline); err != nil {
			return compute.InstanceInfo{}, err
		}
		info, err := m.Compute.GetInstance(ctx, vmID)
		if err != nil {
			return info, usecase.ComputeError(fmt.Sprintf("reading VM %d", vmID), err)
		}
		if info.IPv4 != "" {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(cmp.Or(m.Settings.AddressPollInterval, usecase.DefaultAddressPollInterval)):
		}
	}
	return compute.InstanceInfo{}, apperr.ComputeFailed.Detailf(
		"the compute API reported no address for VM %d after %d reads", vmID, polls)
}

func (m Maker) Delete(ctx context.Context, c *store.Cluster, n store.Node) error {
	vmID := n.VMID
	if vmID == 0 && n.CreateRequested {
		id, err := m.repeatCreate(ctx, c, n)
		if RefusedCreate(err) {
			return nil // the platform refused the create: no VM exists
		}
		if err != nil {
			return err
		}
		vmID = id
	}
	if vmID == 0 {
		return nil
	}
	if err := m.Compute.DeleteInstance(ctx, vmID); err != nil {
		return usecase.ComputeError(fmt.Sprintf("deleting VM %d", vmID), err)
	}
	return nil
}

// repeatCreate repeats the create of node n's VM, as its role sends it.
func (m Maker) repeatCreate(ctx context.Context, c *store.Cluster, n store.Node) (int64, error) {
	if n.Role != store.RoleWorker {
		return m.Create(ctx, c, n, nil)
	}
	p, err := m.Store.PoolByID(ctx, n.PoolID)
	if err != nil {
		return 0, usecase.DatabaseError(err)
	}
	return m.Create(ctx, c, n, &p)
}

// RefusedCreate: the platform refused a create (4xx), so a repeat of it
// made nothing and the first made nothing either.
func RefusedCreate(err error) bool {
	var ae *compute.APIError
	return errors.As(err, &ae) && ae.Status >= http.StatusBadRequest && ae.Status < http.StatusInternalServerError
}
