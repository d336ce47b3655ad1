package founding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/store"
)

// specOf is the validated request a founding's VMs are created from.
func specOf(c *store.Cluster) (Spec, error) {
	var spec Spec
	if err := json.Unmarshal(c.FoundingSpec, &spec); err != nil {
		return spec, fmt.Errorf("reading the founding spec of cluster %d: %w", c.ID, err)
	}
	return spec, nil
}

// undo tears down what a failed founding made and ends the cluster failed
// with reason. If the teardown fails, the cluster goes on as deleting with
// both reasons, and the reconciler retries it; either way nil, as how the
// founding goes on is recorded. An error: not even that could be recorded
// (the lease then runs out, and the reconciler undoes it).
func (s *Service) undo(ctx context.Context, op *operation, reason string) error {
	err := s.teardown(ctx, &op.cluster, op.nodes)
	if err == nil {
		err = s.Store.EndOperation(ctx, op.cluster.ID, op.lease.Owner, store.StatusFailed, reason)
	} else {
		s.logger().ErrorContext(ctx, "undoing a founding failed; the reconciler retries", "cluster_id", op.cluster.ID, "cause", err.Error())
		err = s.Store.Release(ctx, op.cluster.ID, op.lease.Owner, store.Released{
			Status: store.StatusDeleting, Until: s.now(), Reason: reason + "; deleting what it made failed: " + reasonOf(err)})
	}
	if err != nil {
		return fmt.Errorf("recording an undone founding: %w", err)
	}
	return nil
}

// teardown deletes every VM of the cluster, the security group founding
// made and the DNS record. A VM or group whose create was sent but whose id
// was never recorded (the answer was lost, or the driver died) is found by
// repeating its create with the same token, which answers the object the
// first create made, and then deleted.
func (s *Service) teardown(ctx context.Context, c *store.Cluster, nodes []store.Node) error {
	for _, n := range nodes {
		if err := s.deleteVM(ctx, c, n); err != nil {
			return err
		}
	}
	if err := s.deleteSecurityGroup(ctx, c); err != nil {
		return err
	}
	if err := s.DNS.DeleteA(ctx, s.Settings.BaseDNSDomain, c.ControlPlaneDNSName); err != nil {
		// The record points at addresses that no longer exist; report, go on.
		s.logger().WarnContext(ctx, "deleting dns record failed", "cluster_id", c.ID, "cause", err.Error())
	}
	return nil
}

func (s *Service) deleteVM(ctx context.Context, c *store.Cluster, n store.Node) error {
	vmID := n.VMID
	if vmID == 0 && n.CreateRequested {
		id, err := s.repeatCreate(ctx, c, n)
		if refusedCreate(err) {
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
	if err := s.Compute.DeleteInstance(ctx, vmID); err != nil {
		return computeError(fmt.Sprintf("deleting VM %d", vmID), err)
	}
	return nil
}

// repeatCreate repeats the create of node n's VM, as its role sends it.
func (s *Service) repeatCreate(ctx context.Context, c *store.Cluster, n store.Node) (int64, error) {
	if n.Role != store.RoleWorker {
		return s.createVM(ctx, c, n)
	}
	p, err := s.Store.PoolByID(ctx, n.PoolID)
	if err != nil {
		return 0, databaseError(err)
	}
	return s.createWorkerVM(ctx, c, p, n)
}

func (s *Service) deleteSecurityGroup(ctx context.Context, c *store.Cluster) error {
	sgID := c.CreatedSecurityGroupID
	if sgID == nil && c.SecurityGroupRequested {
		id, err := s.Compute.CreateSecurityGroup(ctx, securityGroupOf(c))
		if refusedCreate(err) {
			return nil
		}
		if err != nil {
			return computeError("finding the security group", err)
		}
		sgID = &id
	}
	if sgID == nil {
		return nil
	}
	if err := s.Compute.DeleteSecurityGroup(ctx, *sgID); err != nil {
		return computeError("deleting the security group", err)
	}
	return nil
}

// refusedCreate: the platform refused a create (4xx), so a repeat of it
// made nothing and the first made nothing either.
func refusedCreate(err error) bool {
	var ae *compute.APIError
	return errors.As(err, &ae) && ae.Status >= http.StatusBadRequest && ae.Status < http.StatusInternalServerError
}

// reasonOf is what GET shows of a failure: the operator-facing message of an
// *apperr.Error, or a generic sentence (causes go to the log, not the API).
func reasonOf(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code.String() + ": " + e.Message
	}
	return "internal error; see the logs"
}
