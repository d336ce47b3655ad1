package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/keyring"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// Found founds a cluster for org. bearer is the operator's token, passed on
// to the platform APIs. Without an idempotency key one is made up, so a
// founding that outlives the request can still be followed (Result.Key).
func (s *Service) Found(ctx context.Context, org auth.Principal, bearer string, req clusterspec.Request, idempotencyKey string) (*Result, error) {
	spec, err := req.Validate()
	if err != nil {
		return nil, err
	}
	ctx = platformauth.WithToken(ctx, bearer)
	ownKey := idempotencyKey != ""
	if ownKey {
		release, err := s.claim(ctx, org, idempotencyKey, spec)
		if errors.Is(err, store.ErrDuplicate) {
			return s.replay(ctx, org, idempotencyKey, spec)
		}
		if err != nil {
			return nil, err
		}
		defer release()
	} else {
		idempotencyKey = generatedKey()
	}
	// Before any remote call: a cluster whose nodes could not verify their
	// downloads is not founded.
	artifacts, err := s.recordedArtifacts(s.versionOf(spec), spec.CNI)
	if err != nil {
		return nil, err
	}
	// Reads, no side effect: a bad subnet, image or instance type is bad
	// input, and nothing is written for it.
	if err := s.vms().CheckRefs(ctx, refsOf(spec)); err != nil {
		return nil, err
	}
	// A restore's snapshot and its cluster's keys, read before anything
	// is written (restore.go).
	in, err := s.inherit(ctx, org.OrgID, spec)
	if err != nil {
		return nil, err
	}
	op, err := s.begin(ctx, org.OrgID, spec, idempotencyKey, ownKey, artifacts, in)
	if errors.Is(err, store.ErrDuplicate) {
		// A concurrent request with the same key committed first.
		return s.replay(ctx, org, idempotencyKey, spec)
	}
	if err != nil {
		return nil, err
	}
	return s.drive(ctx, org, op)
}

// claim holds key for this request from before its first remote call (the
// platform references are checked, the keys made, before the cluster row
// exists): a request with the same key meanwhile answers at once from the
// database, never after the same compute calls. A key a cluster was
// founded under is store.ErrDuplicate (replay it). release lets go once
// the request is done; the claim of a request that died runs out with its
// lease.
func (s *Service) claim(ctx context.Context, org auth.Principal, key string, spec clusterspec.Spec) (release func(), err error) {
	c := store.FoundingClaim{OrgID: org.OrgID, Key: key, Fingerprint: spec.Fingerprint(), Lease: s.RequestLease()}
	held, err := s.Store.ClaimFoundingKey(ctx, c, s.Clock())
	switch {
	case errors.Is(err, store.ErrClaimed) && held != "" && held != c.Fingerprint:
		return nil, apperr.IdempotencyKeyReused.New()
	case errors.Is(err, store.ErrClaimed):
		return nil, foundingInProgress()
	case err != nil:
		return nil, usecase.DatabaseError(err)
	}
	return func() { s.releaseClaim(ctx, c) }, nil
}

// releaseClaim lets go of c on a context the request's end does not
// cancel; a failure is logged, and the claim runs out by itself.
func (s *Service) releaseClaim(ctx context.Context, c store.FoundingClaim) {
	if err := s.Store.ReleaseFoundingKey(context.WithoutCancel(ctx), c); err != nil {
		s.Logger().WarnContext(ctx, "releasing an idempotency key's claim failed; it runs out with its lease", "cause", err.Error())
	}
}

// generatedKey is the idempotency key of a request that brought none.
func generatedKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return "k8sapi-" + hex.EncodeToString(b)
}

// begin makes the cluster's trust (or takes a restore's, in), seals it
// under a fresh data key for a reserved id and commits the cluster
// (founding, leased to this request) with its intended nodes. Nothing
// remote has happened yet but the KMS data key, which leaves nothing
// behind if this fails.
func (s *Service) begin(ctx context.Context, org int64, spec clusterspec.Spec, key string, ownKey bool, artifacts []byte, in *inheritance) (*controlplane.NodeOp, error) {
	trust, err := s.trustOf(spec, in)
	if err != nil {
		return nil, err
	}
	id, err := s.Store.ReserveClusterID(ctx)
	if err != nil {
		return nil, usecase.DatabaseError(err)
	}
	op := &controlplane.NodeOp{Spec: spec, Trust: trust, Lease: s.RequestLease()}
	op.Cluster = s.newCluster(org, id, spec, key)
	op.Cluster.Resumable, op.Cluster.Artifacts = ownKey, artifacts
	recordRestore(&op.Cluster, in)
	if op.DataKey, err = s.Envelope.NewDataKey(ctx, keyring.Scope(&op.Cluster)); err != nil {
		return nil, usecase.KMSError(err)
	}
	op.Cluster.WrappedDataKey, op.Cluster.KMSKeyID = op.DataKey.Wrapped, op.DataKey.KeyID
	if err := keyring.SealTrust(op.DataKey, trust, &op.Cluster); err != nil {
		return nil, err
	}
	for ordinal := 1; ordinal <= spec.ControlPlaneCount; ordinal++ {
		op.Nodes = append(op.Nodes, store.Node{ClusterID: id, Ordinal: ordinal, Name: clusterspec.NodeName(ordinal, id)})
	}
	if err := s.Store.BeginFounding(ctx, op.Cluster, op.Nodes, op.Lease); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return nil, err
		}
		return nil, usecase.DatabaseError(err)
	}
	return op, nil
}

// newCluster is the row of a founding about to begin.
func (s *Service) newCluster(org, id int64, spec clusterspec.Spec, key string) store.Cluster {
	name := clusterspec.ClusterName(org, id)
	fp := spec.Fingerprint()
	specJSON, _ := json.Marshal(spec) // a struct of plain fields cannot fail to marshal
	unhealthyAfter, maxUnhealthy := spec.Remediation()
	return store.Cluster{
		ID: id, OrgID: org, ProjectID: 1, Name: name,
		ControlPlaneDNSName: name + "." + s.Settings.BaseDNSDomain,
		Status:              store.StatusFounding, KeyAlgorithm: string(spec.KeyAlgorithm),
		KubernetesVersion: s.versionOf(spec), ClusterDomain: s.Settings.ClusterDomain,
		ServiceCIDR: s.Settings.ServiceCIDR, PodCIDR: s.Settings.PodCIDR, CNI: string(spec.CNI),
		ControlPlaneCount: spec.ControlPlaneCount, SecurityGroupIDs: spec.SecurityGroupIDs,
		IdempotencyKey: &key, RequestFingerprint: &fp, FoundingSpec: specJSON,
		CreateTokenKey: vm.NewTokenKey(), CreatedAt: s.Clock(), UpdatedAt: s.Clock(),
		UnhealthyAfterSeconds: int(unhealthyAfter / time.Second), MaxUnhealthyPercent: maxUnhealthy,
	}
}

// drive advances the founding this request began until it is done (201,
// with an admin kubeconfig for org's operator), the answer is due (202: the
// engine let go of it and the reconciler finishes it) or it fails: undone
// now (the cause, and what the undo did), or not (503: it goes on).
func (s *Service) drive(ctx context.Context, org auth.Principal, op *controlplane.NodeOp) (*Result, error) {
	res := engine.Drive(ctx, s.Driver(0), s.foundingKind(), op, s.AnswerDeadline(ctx))
	switch res.Outcome {
	case engine.Done:
		// The cluster is active: a kubeconfig that cannot be issued (or
		// recorded) fails the answer, not the founding. The operator asks
		// again (the same Idempotency-Key, or POST /clusters/{id}/kubeconfig).
		admin, err := s.kubeconfigs().IssueAdmin(ctx, org, op.Trust, &op.Cluster, adminkubeconfig.DefaultKubeconfigTTL)
		if err != nil {
			return nil, err
		}
		return resultOf(viewOf(op.Cluster, store.Members{Nodes: op.Nodes}), op.Nodes, admin.Kubeconfig), nil
	case engine.Yielded:
		return accepted(op), nil
	case engine.LeaseLost:
		return nil, foundingInProgress()
	case engine.Undone:
		return nil, usecase.TurnedBack(res.Err, turnedBack(&op.Cluster))
	}
	return nil, usecase.GoesOn(res.Err, goesOn(&op.Cluster))
}

// turnedBack says what the undo of a founding did: ended the cluster
// failed, or (its teardown failed) left it deleting for the reconciler.
func turnedBack(c *store.Cluster) string {
	if c.Status == store.StatusDeleting {
		return fmt.Sprintf("the founding is being turned back: cluster %d is deleting, and the reconciler deletes what it made", c.ID)
	}
	return fmt.Sprintf("the founding was turned back: cluster %d is failed, its VMs and security group deleted", c.ID)
}

// goesOn says what becomes of a founding whose undo could not even be
// recorded: the reconciler claims it once its lease runs out and finishes
// it if its caller can still follow it (resumable), or turns it back.
func goesOn(c *store.Cluster) string {
	if c.Resumable {
		return fmt.Sprintf("the founding of cluster %d goes on: the reconciler finishes it, or turns it back if it cannot; "+
			"poll GET /clusters/%d and retry with the same Idempotency-Key", c.ID, c.ID)
	}
	return fmt.Sprintf("the founding of cluster %d goes on without this request: the reconciler turns it back "+
		"(its VMs deleted, the cluster failed); poll GET /clusters/%d", c.ID, c.ID)
}

// accepted is the answer of a founding the request let go of: what the
// operator polls, and the key to repeat the request with.
func accepted(op *controlplane.NodeOp) *Result {
	view := viewOf(op.Cluster, store.Members{Nodes: op.Nodes})
	return &Result{FoundingResult: apitypes.FoundingResult{ClusterID: op.Cluster.ID}, Accepted: &view, Key: *op.Cluster.IdempotencyKey}
}

func foundingInProgress() error {
	return apperr.FoundingInProgress.Detail(
		"the cluster is still being founded; poll GET /clusters/{id} and repeat this request with the same Idempotency-Key once it is active")
}
