package founding

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/store"
)

// Renderer renders what founding hands out: the VM userdata shim and the
// operator's admin kubeconfig (the same templates the bundle uses).
type Renderer interface {
	Userdata(bundle.UserdataInput) (string, error)
	Kubeconfig(bundle.KubeconfigInput) (string, error)
}

// Settings are the cluster defaults, the public names and the operation's
// time limits (zero: the Default* values).
type Settings struct {
	BaseDNSDomain     string // control-plane names live under it; also the DNS zone
	BootstrapBaseURL  string // rendered into the userdata shim
	KubernetesVersion string
	ServiceCIDR       string
	PodCIDR           string
	ClusterDomain     string
	// AnswerWithin: POST /clusters stops driving the founding after this and
	// answers 202; the reconciler carries on.
	AnswerWithin time.Duration
	// Lease: how long an API invocation holds the operation it drives. It
	// must outlast the function's timeout: a lease that ran out means the
	// holder is dead.
	Lease time.Duration
	// AddressPolls and AddressPollInterval bound the wait for a VM's
	// addresses.
	AddressPolls        int
	AddressPollInterval time.Duration
	LeafLifetime        time.Duration // zero: the cert table's
	// Artifacts is the configured artifact set with its manifest's pins;
	// a cluster records its part of it at founding (artifacts.go).
	Artifacts bundle.Artifacts
}

// DefaultNetworks are the seed's cluster networks.
const (
	DefaultServiceCIDR   = "10.96.0.0/12"
	DefaultPodCIDR       = "172.16.0.0/12"
	DefaultClusterDomain = "cluster.local"
)

// Defaults of the operation's limits. The API functions time out after
// 29 s (template.yaml): the answer leaves room for the kubeconfig and the
// response, and the lease outlasts the function by a margin.
const (
	DefaultAnswerWithin        = 20 * time.Second
	DefaultLease               = 60 * time.Second
	DefaultAddressPolls        = 20
	DefaultAddressPollInterval = 500 * time.Millisecond
)

// Service founds, lists and deletes clusters.
type Service struct {
	Store    *store.Store
	Envelope *envelope.Envelope
	Compute  compute.Client
	DNS      dns.Client
	Renderer Renderer // needed by Found and by the reconciler only
	Settings Settings
	Now      func() time.Time
	Log      *slog.Logger
}

// cleanupTimeout bounds an undo that runs after the request's context is
// gone: an orphan VM costs the customer money.
const cleanupTimeout = 30 * time.Second

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) issuer(alg pki.Algorithm) pki.Issuer {
	return pki.Issuer{Algorithm: alg, Now: s.now, LeafLifetime: s.Settings.LeafLifetime}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Found founds a cluster for org. bearer is the operator's token, passed on
// to the platform APIs. Without an idempotency key one is made up, so a
// founding that outlives the request can still be followed (Result.Key).
func (s *Service) Found(ctx context.Context, org auth.Principal, bearer string, req Request, idempotencyKey string) (*Result, error) {
	spec, err := req.Validate()
	if err != nil {
		return nil, err
	}
	ctx = platformauth.WithToken(ctx, bearer)
	ownKey := idempotencyKey != ""
	if ownKey {
		if res, err := s.replay(ctx, org, idempotencyKey, spec); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	} else {
		idempotencyKey = generatedKey()
	}
	// Before any remote call: a cluster whose nodes could not verify their
	// downloads is not founded.
	artifacts, err := s.recordedArtifacts(spec.CNI)
	if err != nil {
		return nil, err
	}
	// Reads, no side effect: a bad subnet, image or instance type is bad
	// input, and nothing is written for it.
	if err := s.checkPlatformRefs(ctx, refsOf(spec)); err != nil {
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
func (s *Service) begin(ctx context.Context, org int64, spec Spec, key string, ownKey bool, artifacts []byte, in *inheritance) (*operation, error) {
	trust, err := s.trustOf(spec, in)
	if err != nil {
		return nil, err
	}
	id, err := s.Store.ReserveClusterID(ctx)
	if err != nil {
		return nil, databaseError(err)
	}
	op := &operation{spec: spec, trust: trust, lease: s.newLease(s.Settings.Lease, DefaultLease)}
	op.cluster = s.newCluster(org, id, spec, key)
	op.cluster.Resumable, op.cluster.Artifacts = ownKey, artifacts
	recordRestore(&op.cluster, in)
	if op.dataKey, err = s.Envelope.NewDataKey(ctx, keyring.Scope(&op.cluster)); err != nil {
		return nil, kmsError(err)
	}
	op.cluster.WrappedDataKey, op.cluster.KMSKeyID = op.dataKey.Wrapped, op.dataKey.KeyID
	if err := keyring.SealTrust(op.dataKey, trust, &op.cluster); err != nil {
		return nil, err
	}
	for ordinal := 1; ordinal <= spec.ControlPlaneCount; ordinal++ {
		op.nodes = append(op.nodes, store.Node{ClusterID: id, Ordinal: ordinal, Name: nodeName(ordinal, id)})
	}
	if err := s.Store.BeginFounding(ctx, op.cluster, op.nodes, op.lease); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return nil, err
		}
		return nil, databaseError(err)
	}
	return op, nil
}

// newCluster is the row of a founding about to begin.
func (s *Service) newCluster(org, id int64, spec Spec, key string) store.Cluster {
	name := clusterName(org, id)
	fp := spec.Fingerprint()
	specJSON, _ := json.Marshal(spec) // a struct of plain fields cannot fail to marshal
	return store.Cluster{
		ID: id, OrgID: org, ProjectID: 1, Name: name,
		ControlPlaneDNSName: name + "." + s.Settings.BaseDNSDomain,
		Status:              store.StatusFounding, KeyAlgorithm: string(spec.KeyAlgorithm),
		KubernetesVersion: s.Settings.KubernetesVersion, ClusterDomain: s.Settings.ClusterDomain,
		ServiceCIDR: s.Settings.ServiceCIDR, PodCIDR: s.Settings.PodCIDR, CNI: string(spec.CNI),
		ControlPlaneCount: spec.ControlPlaneCount, SecurityGroupIDs: spec.SecurityGroupIDs,
		IdempotencyKey: &key, RequestFingerprint: &fp, FoundingSpec: specJSON,
		CreateTokenKey: newCreateTokenKey(), CreatedAt: s.now(), UpdatedAt: s.now(),
	}
}

// newLease is a fresh lease of length d (def when zero) from now.
func (s *Service) newLease(d, def time.Duration) store.Lease {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return store.Lease{Owner: hex.EncodeToString(b), Until: s.now().Add(orDefault(d, def))}
}

// drive advances the founding this request began until it is done (201,
// with an admin kubeconfig for org's operator), the answer is due (202: the
// engine let go of it and the reconciler finishes it) or it fails (undone
// now, or by the reconciler if even that fails).
func (s *Service) drive(ctx context.Context, org auth.Principal, op *operation) (*Result, error) {
	res := engine.Drive(ctx, s.driver(0), s.foundingKind(), op, s.answerDeadline(ctx))
	switch res.Outcome {
	case engine.Done:
		// The cluster is active: a kubeconfig that cannot be issued (or
		// recorded) fails the answer, not the founding. The operator asks
		// again (the same Idempotency-Key, or POST /clusters/{id}/kubeconfig).
		admin, err := s.issueAdmin(ctx, org, op.trust, &op.cluster, DefaultKubeconfigTTL)
		if err != nil {
			return nil, err
		}
		return resultOf(viewOf(op.cluster, store.Members{Nodes: op.nodes}), op.nodes, admin.Kubeconfig), nil
	case engine.Yielded:
		return accepted(op), nil
	case engine.LeaseLost:
		return nil, foundingInProgress()
	}
	return nil, res.Err
}

// answerDeadline is when a request stops driving its operation and
// answers: after Settings.AnswerWithin, or 5 s before the request's own
// deadline if that comes first.
func (s *Service) answerDeadline(ctx context.Context) time.Time {
	return within(ctx, s.now().Add(orDefault(s.Settings.AnswerWithin, DefaultAnswerWithin)), 5*time.Second)
}

// within is deadline, or margin before ctx's deadline if that comes first.
func within(ctx context.Context, deadline time.Time, margin time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Add(-margin).Before(deadline) {
		return d.Add(-margin)
	}
	return deadline
}

// accepted is the answer of a founding the request let go of: what the
// operator polls, and the key to repeat the request with.
func accepted(op *operation) *Result {
	view := viewOf(op.cluster, store.Members{Nodes: op.nodes})
	return &Result{ClusterID: op.cluster.ID, Accepted: &view, Key: *op.cluster.IdempotencyKey}
}

func (s *Service) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func databaseError(err error) error {
	return apperr.DatabaseUnavailable.Wrap(err)
}

func kmsError(err error) error {
	return apperr.KMSUnavailable.Wrap(err)
}

// trustError classifies a failure to open c's trust: KMS unreachable is
// 503; sealed keys that do not open (tampered, moved, missing) are a 500
// whose event is logged with the cluster (VM 0: the cluster's own keys),
// never the key.
func (s *Service) trustError(ctx context.Context, c *store.Cluster, err error) error {
	if !errors.Is(err, envelope.ErrOpen) {
		return apperr.KMSUnavailable.Wrap(err)
	}
	s.logger().ErrorContext(ctx, "sealed key material does not open", "cluster_id", c.ID, "vm_id", 0)
	return apperr.Internal.Wrap(err)
}

func computeError(what string, err error) error {
	return apperr.ComputeFailed.Detailf("the compute API failed while %s; nothing was kept", what).WithCause(err)
}

func foundingInProgress() error {
	return apperr.FoundingInProgress.Detail(
		"the cluster is still being founded; poll GET /clusters/{id} and repeat this request with the same Idempotency-Key once it is active")
}
