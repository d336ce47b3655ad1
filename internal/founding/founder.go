package founding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/dns"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/keyring"
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

// Settings are the cluster defaults and the public names.
type Settings struct {
	BaseDNSDomain     string // control-plane names live under it; also the DNS zone
	BootstrapBaseURL  string // rendered into the userdata shim
	KubernetesVersion string
	ServiceCIDR       string
	PodCIDR           string
	ClusterDomain     string
	LeafLifetime      time.Duration // zero: the cert table's
}

// DefaultNetworks are the seed's cluster networks.
const (
	DefaultServiceCIDR   = "10.96.0.0/12"
	DefaultPodCIDR       = "172.16.0.0/12"
	DefaultClusterDomain = "cluster.local"
)

// Service founds, lists and deletes clusters.
type Service struct {
	Store    *store.Store
	Envelope *envelope.Envelope
	Compute  compute.Client
	DNS      dns.Client
	Renderer Renderer // needed by Found only
	Settings Settings
	Now      func() time.Time
	Log      *slog.Logger
}

// cleanupTimeout bounds compensation, which runs even when the request's
// context is gone: an orphan VM costs the customer money.
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

// Found founds a cluster for org. bearer is the operator's token, passed on
// to the platform APIs.
func (s *Service) Found(ctx context.Context, org auth.Principal, bearer string, req Request, idempotencyKey string) (*Result, error) {
	spec, err := req.Validate()
	if err != nil {
		return nil, err
	}
	ctx = platformauth.WithToken(ctx, bearer)
	if idempotencyKey != "" {
		if res, err := s.replay(ctx, org, idempotencyKey, spec); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	}
	res, err := s.found(ctx, org, spec, idempotencyKey)
	if errors.Is(err, store.ErrDuplicate) {
		// A concurrent request with the same key committed first.
		return s.replay(ctx, org, idempotencyKey, spec)
	}
	return res, err
}

// founding is the state of one founding, so compensation knows what exists.
type founding struct {
	spec      Spec
	org       int64
	cluster   store.Cluster
	trust     *pki.Trust
	dataKey   *envelope.DataKey
	tx        *store.FoundingTx
	vmIDs     []int64
	createdSG *int64
	nodes     []store.Node
}

func (s *Service) found(ctx context.Context, org auth.Principal, spec Spec, idempotencyKey string) (_ *Result, err error) {
	f := &founding{spec: spec, org: org.OrgID}
	if f.trust, err = s.issuer(spec.KeyAlgorithm).NewTrust(); err != nil {
		return nil, fmt.Errorf("creating cluster trust: %w", err)
	}
	if f.tx, err = s.Store.BeginFounding(ctx); err != nil {
		return nil, databaseError(err)
	}
	defer func() {
		if err != nil {
			s.compensate(ctx, f)
		}
	}()
	if err = s.insertCluster(ctx, f, idempotencyKey); err != nil {
		return nil, err
	}
	if err = s.securityGroups(ctx, f); err != nil {
		return nil, err
	}
	if err = s.createVMs(ctx, f); err != nil {
		return nil, err
	}
	if err = s.issueNodes(ctx, f); err != nil {
		return nil, err
	}
	kubeconfig, err := s.adminKubeconfig(f.trust, &f.cluster)
	if err != nil {
		return nil, err
	}
	if err = f.tx.Commit(ctx); err != nil {
		return nil, databaseError(err)
	}
	s.configureDNS(ctx, &f.cluster, f.nodes)
	return resultOf(viewOf(f.cluster, f.nodes), f.nodes, kubeconfig), nil
}

// insertCluster reserves the id, seals the trust under a fresh data key for
// that id and writes the row (holding the idempotency key).
func (s *Service) insertCluster(ctx context.Context, f *founding, idempotencyKey string) error {
	id, err := f.tx.ReserveClusterID(ctx)
	if err != nil {
		return databaseError(err)
	}
	name := clusterName(f.org, id)
	f.cluster = store.Cluster{
		ID: id, OrgID: f.org, ProjectID: 1, Name: name,
		ControlPlaneDNSName: name + "." + s.Settings.BaseDNSDomain,
		Status:              store.StatusActive, KeyAlgorithm: string(f.spec.KeyAlgorithm),
		KubernetesVersion: s.Settings.KubernetesVersion, ClusterDomain: s.Settings.ClusterDomain,
		ServiceCIDR: s.Settings.ServiceCIDR, PodCIDR: s.Settings.PodCIDR,
		ControlPlaneCount: f.spec.ControlPlaneCount, SecurityGroupIDs: f.spec.SecurityGroupIDs,
		CreatedAt: s.now(), UpdatedAt: s.now(),
	}
	if idempotencyKey != "" {
		fp := f.spec.Fingerprint()
		f.cluster.IdempotencyKey, f.cluster.RequestFingerprint = &idempotencyKey, &fp
	}
	if f.dataKey, err = s.Envelope.NewDataKey(ctx, keyring.Scope(&f.cluster)); err != nil {
		return kmsError(err)
	}
	f.cluster.WrappedDataKey, f.cluster.KMSKeyID = f.dataKey.Wrapped, f.dataKey.KeyID
	if err := keyring.SealTrust(f.dataKey, f.trust, &f.cluster); err != nil {
		return err
	}
	if err := f.tx.InsertCluster(ctx, f.cluster); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return err
		}
		return databaseError(err)
	}
	return nil
}

// securityGroups uses the operator's groups, or creates one that allows all
// traffic from the subnet and the API server port from anywhere.
func (s *Service) securityGroups(ctx context.Context, f *founding) error {
	if len(f.spec.SecurityGroupIDs) > 0 {
		return nil
	}
	subnet, err := s.Compute.Subnet(ctx, f.spec.SubnetID)
	if compute.IsNotFound(err) {
		return apperr.New(apperr.Invalid, "invalid_request", "subnet_id: no such subnet")
	}
	if err != nil {
		return computeError("looking up the subnet", err)
	}
	sgID, err := s.Compute.CreateSecurityGroup(ctx, compute.SecurityGroup{
		Name: f.cluster.Name + "-control-plane", Description: "k8sapi control plane of " + f.cluster.Name,
	})
	if err != nil {
		return computeError("creating the security group", err)
	}
	f.createdSG = &sgID
	rules := []compute.Rule{
		{SecurityGroupID: sgID, IsIngress: true, Protocol: compute.ProtocolAny, PortRange: compute.PortRangeAny,
			CIDR: subnet.CIDRv4, Description: "all IPv4 from the cluster subnet"},
		{SecurityGroupID: sgID, IsIngress: true, Protocol: compute.ProtocolTCPv4, PortRange: "6443",
			CIDR: "0.0.0.0/0", Description: "Kubernetes API"},
	}
	for _, r := range rules {
		if _, err := s.Compute.CreateSecurityGroupRule(ctx, r); err != nil {
			return computeError("creating a security group rule", err)
		}
	}
	f.cluster.SecurityGroupIDs = []int64{sgID}
	if err := f.tx.SetSecurityGroups(ctx, f.cluster.ID, f.cluster.SecurityGroupIDs, f.createdSG); err != nil {
		return databaseError(err)
	}
	return nil
}

// createVMs asks compute for one VM per ordinal, each born with the
// userdata shim that later fetches its bundle.
func (s *Service) createVMs(ctx context.Context, f *founding) error {
	userdata, err := s.Renderer.Userdata(bundle.UserdataInput{BootstrapBaseURL: s.Settings.BootstrapBaseURL})
	if err != nil {
		return fmt.Errorf("rendering userdata: %w", err)
	}
	for ordinal := 1; ordinal <= f.spec.ControlPlaneCount; ordinal++ {
		id, err := s.Compute.CreateInstance(ctx, compute.Instance{
			Name: nodeName(ordinal, f.cluster.ID), ZoneID: f.spec.ZoneID, SubnetID: f.spec.SubnetID,
			ImageID: f.spec.ControlPlaneImageID, InstanceType: f.spec.ControlPlaneInstanceType,
			AllocatePublicIPv4: f.spec.AllocatePublicIPv4, SSHPubkey: f.spec.SSHPubkey,
			SecurityGroupIDs: f.cluster.SecurityGroupIDs, RootVolumeSizeGiB: f.spec.RootVolumeSizeGiB,
			Tags:     map[string]string{"role": "control-plane", "k8sapi/cluster": f.cluster.Name},
			Userdata: userdata,
		})
		if err != nil {
			return computeError(fmt.Sprintf("creating control-plane VM %d", ordinal), err)
		}
		f.vmIDs = append(f.vmIDs, id)
	}
	return nil
}

// issueNodes reads back each VM's addresses and writes its node row with
// its stored identities.
func (s *Service) issueNodes(ctx context.Context, f *founding) error {
	addrs, err := f.tx.VMAddresses(ctx, f.vmIDs)
	if err != nil {
		return databaseError(err)
	}
	for i, vmID := range f.vmIDs {
		a, ok := addrs[vmID]
		if !ok || a.IPv4 == "" {
			return apperr.New(apperr.BadGateway, "compute_failed", fmt.Sprintf("the compute API reported no address for VM %d", vmID))
		}
		n := store.Node{VMID: vmID, Ordinal: i + 1, Name: nodeName(i+1, f.cluster.ID),
			IPv4: a.IPv4, IPv6: a.IPv6, PublicIPv4: a.PublicIPv4}
		if err := s.insertNode(ctx, f, n); err != nil {
			return err
		}
		f.nodes = append(f.nodes, n)
	}
	return nil
}

// insertNode issues node n's stored identities (the cert table's
// PhaseFounding entries), seals their keys and writes the node. n is a copy:
// the sealed keys are not kept past the insert.
func (s *Service) insertNode(ctx context.Context, f *founding, n store.Node) error {
	facts, err := keyring.NodeFacts(&f.cluster, n)
	if err != nil {
		return err
	}
	issued, err := s.issuer(f.spec.KeyAlgorithm).IssuePhase(f.trust, pki.PhaseFounding, facts)
	if err != nil {
		return err
	}
	n.Identities, err = keyring.SealIdentities(f.dataKey, n.VMID, issued)
	for _, kp := range issued {
		clear(kp.KeyPEM)
	}
	if err != nil {
		return err
	}
	if err := f.tx.InsertNode(ctx, f.cluster.ID, n); err != nil {
		return databaseError(err)
	}
	return nil
}

// adminKubeconfig mints a fresh cluster-admin identity for the operator,
// pointing at the shared control-plane name.
func (s *Service) adminKubeconfig(t *pki.Trust, c *store.Cluster) (string, error) {
	kp, err := s.issuer(pki.Algorithm(c.KeyAlgorithm)).Issue(t, pki.Admin, pki.Node{})
	if err != nil {
		return "", err
	}
	return s.Renderer.Kubeconfig(bundle.KubeconfigInput{
		ClusterName: c.Name, Server: "https://" + c.ControlPlaneDNSName + ":6443", UserName: "cluster-admin",
		CAPEM: []byte(c.CACert), Identity: kp,
	})
}

// configureDNS points the control-plane name at the first of the suggested
// records. It is best effort by design: the committed rows are the
// cluster's truth, so a DNS failure is reported, never rolled back.
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

// compensate undoes the side effects outside the transaction: every VM
// created so far and the security group founding made. It runs on a context
// that outlives the request, bounded by cleanupTimeout.
func (s *Service) compensate(ctx context.Context, f *founding) {
	if f.tx != nil {
		f.tx.Rollback(ctx)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, id := range f.vmIDs {
		if err := s.Compute.DeleteInstance(ctx, id); err != nil {
			s.logger().ErrorContext(ctx, "compensation: deleting VM failed; it is orphaned", "vm_id", id, "cause", err.Error())
		}
	}
	if f.createdSG != nil {
		if err := s.Compute.DeleteSecurityGroup(ctx, *f.createdSG); err != nil {
			s.logger().ErrorContext(ctx, "compensation: deleting security group failed", "security_group_id", *f.createdSG, "cause", err.Error())
		}
	}
	if len(f.vmIDs) > 0 || f.createdSG != nil {
		s.logger().WarnContext(ctx, "founding rolled back", "org_id", f.org, "vms_deleted", len(f.vmIDs))
	}
}

func (s *Service) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func databaseError(err error) error {
	return apperr.Wrap(apperr.Unavailable, "database_unavailable", "the database is unavailable; nothing was created", err)
}

func kmsError(err error) error {
	return apperr.Wrap(apperr.Unavailable, "kms_unavailable", "the key service is unavailable; nothing was created", err)
}

func computeError(what string, err error) error {
	return apperr.Wrap(apperr.BadGateway, "compute_failed", "the compute API failed while "+what+"; nothing was kept", err)
}
