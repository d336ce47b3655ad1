package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/controlplane"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// foundingSteps is the order of a founding, the truth both drivers
// follow: its security group, then its nodes, then the cluster goes active.
func (s *Service) foundingSteps() []engine.Step[*controlplane.NodeOp] {
	steps := []engine.Step[*controlplane.NodeOp]{{Name: "security group", Run: s.ensureSecurityGroup}}
	steps = append(steps, s.controlPlane().NodeSteps()...)
	return append(steps, engine.Step[*controlplane.NodeOp]{Name: "activation", Run: s.activate})
}

// ensureSecurityGroup uses the operator's groups, or creates one that
// allows all traffic from the subnet and the API server port from anywhere.
func (s *Service) ensureSecurityGroup(ctx context.Context, op *controlplane.NodeOp, deadline time.Time) error {
	if len(op.Spec.SecurityGroupIDs) > 0 || op.Cluster.CreatedSecurityGroupID != nil {
		return nil
	}
	if err := s.InTime(deadline); err != nil {
		return err
	}
	subnet, err := s.vms().Subnet(ctx, op.Spec.SubnetID)
	if err != nil {
		return err
	}
	sgID, err := s.createSecurityGroup(ctx, op)
	if err != nil {
		return err
	}
	for i, r := range groupRules(sgID, subnet.CIDRv4) {
		r.IdempotencyToken = vm.Token(&op.Cluster, fmt.Sprintf("sg-rule-%d", i+1))
		if _, err := s.Compute.CreateSecurityGroupRule(ctx, r); err != nil {
			return usecase.ComputeError("creating a security group rule", err)
		}
	}
	if err := usecase.Recorded(s.Store.RecordSecurityGroup(ctx, op.Cluster.ID, op.Lease.Owner, sgID)); err != nil {
		return err
	}
	op.Cluster.CreatedSecurityGroupID, op.Cluster.SecurityGroupIDs = &sgID, []int64{sgID}
	return nil
}

// refsOf is what POST /clusters names.
func refsOf(spec clusterspec.Spec) vm.Refs {
	return vm.Refs{SubnetID: spec.SubnetID, ImageID: spec.ControlPlaneImageID, InstanceType: spec.ControlPlaneInstanceType,
		ImageField: "control_plane_image_id", InstanceTypeField: "control_plane_instance_type"}
}

// createSecurityGroup records that the create is sent, then sends it under
// the cluster's token for its group.
func (s *Service) createSecurityGroup(ctx context.Context, op *controlplane.NodeOp) (int64, error) {
	if err := usecase.Recorded(s.Store.MarkSecurityGroupRequested(ctx, op.Cluster.ID, op.Lease.Owner)); err != nil {
		return 0, err
	}
	op.Cluster.SecurityGroupRequested = true
	id, err := s.Compute.CreateSecurityGroup(ctx, securityGroupOf(&op.Cluster))
	if err != nil {
		return 0, usecase.ComputeError("creating the security group", err)
	}
	return id, nil
}

func securityGroupOf(c *store.Cluster) compute.SecurityGroup {
	return compute.SecurityGroup{Name: c.Name + "-control-plane", Description: "k8sapi control plane of " + c.Name,
		IdempotencyToken: vm.Token(c, "sg")}
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

// activate makes the cluster active, then points its DNS name (best
// effort: the rows are the truth, a DNS failure is reported, never undone).
func (s *Service) activate(ctx context.Context, op *controlplane.NodeOp, _ time.Time) error {
	if err := usecase.Recorded(s.Store.FinishFounding(ctx, op.Cluster.ID, op.Lease.Owner)); err != nil {
		return err
	}
	op.Cluster.Status = store.StatusActive
	s.controlPlane().PointDNS(ctx, &op.Cluster, op.Nodes)
	return nil
}

// foundingKind: a founding's steps; let go still founding (and resumable:
// its caller holds the key to follow it); undone by tearing down what it
// made.
func (s *Service) foundingKind() engine.Kind[*controlplane.NodeOp] {
	return engine.Kind[*controlplane.NodeOp]{
		Name:  Founding,
		Steps: func(*controlplane.NodeOp) []engine.Step[*controlplane.NodeOp] { return s.foundingSteps() },
		Release: func(ctx context.Context, op *controlplane.NodeOp, until time.Time, step string) error {
			return s.Store.Release(ctx, op.Cluster.ID, op.Lease.Owner,
				store.Released{Status: store.StatusFounding, Until: until, Resumable: true, Step: step})
		},
		Undo: func(ctx context.Context, op *controlplane.NodeOp, cause error) error {
			return s.undo(ctx, op, usecase.Reason(cause))
		},
	}
}
