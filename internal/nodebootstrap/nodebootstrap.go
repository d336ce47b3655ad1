// Package nodebootstrap is the GET /bootstrap/control-plane/{vm_id} use
// case after the four proofs: load the topology, check the node's bootstrap
// window (progress.Window: open from founding or a re-open until the node is
// first ready, for at most BOOTSTRAP_WINDOW), rehydrate the cluster's CAs
// (one KMS Decrypt, or none on a warm container), open the node's
// identities (its window's first fetch issues and stores them: window.go)
// and render the bundle from the artifact set the cluster recorded at
// founding (the configured one for clusters founded before). The renewal
// by proof of possession is renew.go.
//
// In: a VM that passed auth. Out: a *bundle.Bundle, or an *apperr.Error
// (409 bootstrap_closed outside the window). It never writes to the
// cluster's row. Every fetch past the proofs is recorded
// (time, VM, request id, served or refused) before the bundle is answered:
// a fetch that cannot be recorded is not served (503). A served fetch also
// moves a pending node to bundle_fetched (internal/progress), best effort.
package nodebootstrap

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/requestid"
	"github.com/excloud/k8sapi/internal/store"
)

// Topologies loads what a bundle is rendered from (one round trip) and
// records each fetch with everything it writes: the identities a window's
// first fetch issues and a pending node's bundle_fetched (one more).
type Topologies interface {
	TopologyForVM(ctx context.Context, vmID int64) (store.Topology, error)
	RecordFetch(ctx context.Context, w store.FetchWrites) (store.FetchWritten, error)
}

var _ Topologies = (*store.Store)(nil)

// Service renders bundles.
type Service struct {
	Store   Topologies
	Renewer Renewer
	// CRLs serves the etcd CRL route (etcdcrl.go).
	CRLs CRLs
	// Memberships serves the etcd membership route (etcdmembership.go).
	Memberships Memberships
	// Steps serves an upgrade's addons route (addons.go).
	Steps    AddonSteps
	Envelope *envelope.Envelope
	Renderer *bundle.Renderer
	// Artifacts is the configured artifact set with its manifest's pins,
	// for clusters founded before sets were recorded (artifacts).
	Artifacts artifacts.Set
	// Leaves is the leaf lifetime every identity is issued with and when a
	// stored one is renewed (renew.go).
	Leaves pki.LeafSchedule
	// Window is the bootstrap window's length (BOOTSTRAP_WINDOW).
	Window time.Duration
	Now    func() time.Time
	Log    *slog.Logger
}

// Bundle renders vm's bundle. Past the proofs (one round trip) it costs
// two more: the topology, then every write of the fetch together.
func (s *Service) Bundle(ctx context.Context, vm auth.BootstrapVM) (*bundle.Bundle, error) {
	t, err := s.load(ctx, vm)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if err := s.windowRefusal(t, now); err != nil {
		s.recordRefusal(ctx, vm, now)
		return nil, err
	}
	plan, err := s.prepare(ctx, t)
	if err != nil {
		return nil, err
	}
	b, err := s.Renderer.Render(plan.in)
	if err != nil {
		return nil, err
	}
	written, err := s.Store.RecordFetch(ctx, store.FetchWrites{Fetch: fetchOf(ctx, vm, store.FetchServed, now),
		Window: plan.window, Phase: progress.FetchPhase(vm, t.role(), t.phase)})
	if err != nil {
		return nil, databaseError(err)
	}
	s.phaseRecorded(ctx, vm, t, written.Phase)
	if plan.window != nil && !written.WindowStored {
		return s.renderStored(ctx, t, plan)
	}
	return b, nil
}

// target is a VM's cluster and node, as stored (sealed keys, stored
// identities, bootstrap phase and window) and as facts (what bundles and
// certificates are made from).
type target struct {
	row     *store.Cluster
	self    store.Node
	cluster clusterfacts.Cluster
	peers   []clusterfacts.Node
	node    clusterfacts.Node
	phase   clusterfacts.Phase // where self's bootstrap stands
	crl     store.EtcdCRL      // the cluster's current etcd CRL (etcdcrl.go)
	// signerKey is the service-account signer's current key (PEM), once a
	// renewal opened the cluster's keys.
	signerKey []byte
}

// role is the role of t's node.
func (t *target) role() clusterfacts.Role { return clusterfacts.RoleOf(t.self.Role) }

// targetOf is topo with its facts, self being the VM's node among its rows.
func targetOf(topo *store.Topology, self store.Node) (*target, error) {
	cluster, peers, err := clusterfacts.FromRows(&topo.Cluster, topo.Nodes)
	if err != nil {
		return nil, err
	}
	phase, err := clusterfacts.ParsePhase(self.Phase)
	if err != nil {
		return nil, fmt.Errorf("node of vm %d: %w", self.VMID, err)
	}
	cluster.KubernetesVersion = cmp.Or(self.KubernetesVersion, cluster.KubernetesVersion) // the node's own (issue 38)
	return &target{row: &topo.Cluster, self: self, cluster: cluster, peers: peers,
		node: clusterfacts.NodeOf(self), phase: phase, crl: topo.EtcdCRL}, nil
}

// load reads vm's topology and finds its node: not found for a VM that is
// no control-plane node of its org, a conflict when its cluster is not
// active.
func (s *Service) load(ctx context.Context, vm auth.BootstrapVM) (*target, error) {
	return loadTarget(ctx, vm, s.Store.TopologyForVM, "control-plane node")
}

// loadTarget reads vm's topology with topology and finds its node (a
// role's): not found for a VM that is no such node of its org, a conflict
// when its cluster is not active.
func loadTarget(ctx context.Context, vm auth.BootstrapVM, topology func(context.Context, int64) (store.Topology, error), role string) (*target, error) {
	topo, err := topology(ctx, vm.VMID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, notFound(role)
	case err != nil:
		return nil, databaseError(err)
	}
	c := &topo.Cluster
	if c.OrgID != vm.OrgID {
		// Proofs passed, but the VM is not this org's node: say nothing
		// more than for an unknown VM.
		return nil, notFound(role)
	}
	if c.Status != store.StatusActive {
		return nil, apperr.ClusterNotActive.Detail("the VM's cluster is " + c.Status)
	}
	self, ok := findNode(topo.Nodes, vm.VMID)
	if !ok {
		return nil, notFound(role)
	}
	return targetOf(&topo, self)
}

func databaseError(err error) error {
	return apperr.DatabaseUnavailable.Wrap(err)
}

// openError classifies a failure to open t's sealed keys: KMS unreachable
// is 503; a sealed value that does not open (tampered, moved, missing) is a
// 500 whose event is logged with the cluster and VM, never the key.
func (s *Service) openError(ctx context.Context, t *target, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, envelope.ErrOpen):
		s.logger().ErrorContext(ctx, "sealed key material does not open", "cluster_id", t.row.ID, "vm_id", t.self.VMID)
		return apperr.Internal.Wrap(err)
	}
	return apperr.KMSUnavailable.Wrap(err)
}

// windowRefusal is progress.Window's answer for t's node at now.
func (s *Service) windowRefusal(t *target, now time.Time) error {
	w := progress.Window{OpenedAt: t.self.BootstrapOpenedAt, ReadyAt: t.self.ReadyAt, Length: s.Window}
	return w.Refusal(t.phase, now)
}

// fetchOf is one fetch of vm's bundle with this request's id.
func fetchOf(ctx context.Context, vm auth.BootstrapVM, outcome string, at time.Time) store.Fetch {
	return store.Fetch{VMID: vm.VMID, RequestID: requestid.From(ctx), Outcome: outcome, FetchedAt: at}
}

// record writes one fetch of vm's bundle, alone.
func (s *Service) record(ctx context.Context, vm auth.BootstrapVM, outcome string, at time.Time) error {
	_, err := s.Store.RecordFetch(ctx, store.FetchWrites{Fetch: fetchOf(ctx, vm, outcome, at)})
	return err
}

// recordRefusal records a fetch refused because the bootstrap is closed: a
// ready node's VM asking again is worth an operator's look. The refusal is
// answered whether or not it could be recorded.
func (s *Service) recordRefusal(ctx context.Context, vm auth.BootstrapVM, at time.Time) {
	if err := s.record(ctx, vm, store.FetchClosed, at); err != nil {
		s.logger().WarnContext(ctx, "recording a refused fetch failed", "vm_id", vm.VMID, "cause", err.Error())
	}
}

// phaseRecorded judges the move of a pending node to bundle_fetched that
// the fetch sent with its record. A refusal is logged, never answered: the
// VM has its bundle, and its next report moves it on.
func (s *Service) phaseRecorded(ctx context.Context, vm auth.BootstrapVM, t *target, out store.PhaseOutcome) {
	if progress.FetchPhase(vm, t.role(), t.phase) == nil {
		return
	}
	if err := progress.FetchPhaseOutcome(out); err != nil {
		s.logger().WarnContext(ctx, "recording bundle_fetched failed", "vm_id", vm.VMID, "cause", err.Error())
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func notFound(role string) error {
	return apperr.NotFound.Detail("no " + role + " for this VM")
}

func findNode(nodes []store.Node, vmID int64) (store.Node, bool) {
	for _, n := range nodes {
		if n.VMID == vmID {
			return n, true
		}
	}
	return store.Node{}, false
}

// open rehydrates t's cluster's trust and opens its node's stored identities.
func (s *Service) open(ctx context.Context, t *target) (*keyring.Opened, map[pki.Name]pki.KeyPair, error) {
	opened, err := keyring.Open(ctx, s.Envelope, t.row)
	if err != nil {
		return nil, nil, s.openError(ctx, t, err)
	}
	ids, err := keyring.OpenIdentities(opened.DataKey, t.self)
	if err != nil {
		return nil, nil, s.openError(ctx, t, err)
	}
	return opened, ids, nil
}

// plan is what a fetch renders from: the bundle's input, the opened
// trust and, on its window's first fetch, the identities it issued, to be
// stored with the fetch's record.
type plan struct {
	in     bundle.Input
	opened *keyring.Opened
	window *store.WindowIdentities
}

// prepare opens t's trust and identities (issuing its window's on the
// window's first fetch) and makes its node's bundle input.
func (s *Service) prepare(ctx context.Context, t *target) (*plan, error) {
	opened, ids, err := s.open(ctx, t)
	if err != nil {
		return nil, err
	}
	artifacts, err := s.artifacts(t.row, t.cluster)
	if err != nil {
		return nil, err
	}
	in := bundleInput(t, artifacts, opened, ids)
	if in.EtcdCRLPEM, err = bundleCRL(t, opened, s.now()); err != nil {
		return nil, err
	}
	window, issued, err := s.windowIdentities(ctx, t, opened, in.IsInitial())
	if err != nil {
		return nil, err
	}
	maps.Copy(ids, window) // in holds ids: the window's identities are rendered too
	return &plan{in: in, opened: opened, window: issued}, nil
}

// artifacts is the artifact set of a node at cluster's version (the
// node's own) in c: the cluster's record (recordedArtifacts) when the node
// is at the cluster's version, and at another (a node an upgrade made, or
// one it has not moved yet) that record at the node's release
// (artifacts.Set.AtRelease).
func (s *Service) artifacts(c *store.Cluster, cluster clusterfacts.Cluster) (artifacts.Set, error) {
	a, err := s.recordedArtifacts(c, cluster.CNI)
	if err != nil || cluster.KubernetesVersion == c.KubernetesVersion {
		return a, err
	}
	r, ok := artifacts.ReleaseOf(cluster.KubernetesVersion)
	if !ok {
		return a, fmt.Errorf("a node of cluster %d is at %s, which is no supported release", c.ID, cluster.KubernetesVersion)
	}
	return a.AtRelease(r, s.Artifacts, cluster.CNI), nil
}

// recordedArtifacts is the artifact set c's nodes use: the one recorded at
// its founding, whatever the configuration says now, so a deployment's new
// pins never change what an existing cluster's nodes download. A cluster
// without a record, and any field its record lacks, render from the
// configuration: there is nothing else to render them from.
func (s *Service) recordedArtifacts(c *store.Cluster, cni clusterfacts.CNI) (artifacts.Set, error) {
	a := s.Artifacts.Record(c.KubernetesVersion, cni)
	if c.Artifacts == nil {
		return a, nil
	}
	a.SHA256 = nil // the record's pins only, never merged with today's
	if err := json.Unmarshal(c.Artifacts, &a); err != nil {
		return a, fmt.Errorf("reading cluster %d's recorded artifacts: %w", c.ID, err)
	}
	return a, nil
}

// issuer signs a cluster's leaves, of its algorithm, with the configured
// lifetime.
func (s *Service) issuer(alg pki.Algorithm) pki.Issuer {
	return pki.Issuer{Algorithm: alg, Now: s.Now, LeafLifetime: s.Leaves.Lifetime}
}

// bundleInput is the renderer's view of t and this fetch's keys.
func bundleInput(t *target, artifacts artifacts.Set, opened *keyring.Opened, ids map[pki.Name]pki.KeyPair) bundle.Input {
	return bundle.Input{
		Cluster:              t.cluster,
		Nodes:                t.peers,
		SelfVMID:             t.self.VMID,
		Artifacts:            artifacts,
		CACerts:              keyring.CACerts(t.row),
		ServiceAccountKeyPEM: opened.ServiceAccountKey,
		ServiceAccountPubPEM: keyring.ServiceAccountPub(t.row),
		Identities:           ids,
		SecretsEncryptionKey: opened.Trust.SecretsEncryptionKey,
	}
}

func (s *Service) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
