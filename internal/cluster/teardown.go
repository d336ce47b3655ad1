package cluster

import (
	"context"
	"fmt"

	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// undo tears down what a failed founding made and ends the cluster failed
// with reason. If the teardown fails, the cluster goes on as deleting with
// both reasons, and the reconciler retries it; either way nil, as how the
// founding goes on is recorded. An error: not even that could be recorded
// (the lease then runs out, and the reconciler undoes it).
func (s *Service) undo(ctx context.Context, op *controlplane.NodeOp, reason string) error {
	status := store.StatusFailed
	err := s.teardown(ctx, &op.Cluster, op.Nodes)
	if err == nil {
		err = s.Store.EndOperation(ctx, op.Cluster.ID, op.Lease.Owner, status, reason)
	} else {
		s.Logger().ErrorContext(ctx, "undoing a founding failed; the reconciler retries", "cluster_id", op.Cluster.ID, "cause", err.Error())
		status = store.StatusDeleting
		err = s.Store.Release(ctx, op.Cluster.ID, op.Lease.Owner, store.Released{
			Status: status, Until: s.Clock(), Reason: reason + "; deleting what it made failed: " + usecase.Reason(err)})
	}
	if err != nil {
		return fmt.Errorf("recording an undone founding: %w", err)
	}
	op.Cluster.Status = status // what the answer says (turnedBack)
	return nil
}

// teardown deletes every VM of the cluster, the security group founding
// made and the DNS record. A VM or group whose create was sent but whose id
// was never recorded (the answer was lost, or the driver died) is found by
// repeating its create with the same token, which answers the object the
// first create made, and then deleted.
func (s *Service) teardown(ctx context.Context, c *store.Cluster, nodes []store.Node) error {
	for _, n := range nodes {
		if err := s.vms().Delete(ctx, c, n); err != nil {
			return err
		}
	}
	if err := s.deleteSecurityGroup(ctx, c); err != nil {
		return err
	}
	if err := s.DNS.DeleteA(ctx, s.Settings.BaseDNSDomain, c.ControlPlaneDNSName); err != nil {
		// The record points at addresses that no longer exist; report, go on.
		s.Logger().WarnContext(ctx, "deleting dns record failed", "cluster_id", c.ID, "cause", err.Error())
	}
	return nil
}

func (s *Service) deleteSecurityGroup(ctx context.Context, c *store.Cluster) error {
	sgID := c.CreatedSecurityGroupID
	if sgID == nil && c.SecurityGroupRequested {
		id, err := s.Compute.CreateSecurityGroup(ctx, securityGroupOf(c))
		if vm.RefusedCreate(err) {
			return nil
		}
		if err != nil {
			return usecase.ComputeError("finding the security group", err)
		}
		sgID = &id
	}
	if sgID == nil {
		return nil
	}
	if err := s.Compute.DeleteSecurityGroup(ctx, *sgID); err != nil {
		return usecase.ComputeError("deleting the security group", err)
	}
	return nil
}
