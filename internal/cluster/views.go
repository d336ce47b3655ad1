package cluster

import (
	"cmp"
	"github.com/excloud/k8sapi/internal/carotation"
	engine "github.com/excloud/k8sapi/internal/operation"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
)

// Result is a founding's answer: the 201 body of POST /clusters, and
// how it is answered.
type Result struct {
	apitypes.FoundingResult
	// Replayed is true when an Idempotency-Key returned an earlier founding.
	Replayed bool
	// Accepted is set when the founding goes on after the answer (202): it
	// is the body (the cluster to poll, no kubeconfig), and Key is the
	// Idempotency-Key to repeat the request with once the cluster is active.
	Accepted *apitypes.ClusterView
	Key      string
}

// viewOf is the cluster with its control-plane nodes (their bootstrap and
// expiry) and its pools with their workers.
func viewOf(c store.Cluster, m store.Members) apitypes.ClusterView {
	nodes := controlplane.ControlPlaneOf(m.Nodes)
	v := apitypes.ClusterView{
		ID: c.ID, Name: c.Name, Status: c.Status, StatusReason: c.StatusReason, ControlPlaneDNSName: c.ControlPlaneDNSName,
		ControlPlaneVMIDs: []int64{}, ControlPlaneCount: c.ControlPlaneCount, Nodes: []apitypes.NodeView{},
		ServiceCIDR: c.ServiceCIDR, PodCIDR: c.PodCIDR, CNI: c.CNI, KubernetesVersion: c.KubernetesVersion,
		KeyAlgorithm: c.KeyAlgorithm, DNSConfigured: c.DNSConfigured, DNSError: c.DNSError,
		RestoredFromSnapshotID: c.RestoredFromSnapshotID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		UnhealthyAfter: (time.Duration(c.UnhealthyAfterSeconds) * time.Second).String(), MaxUnhealthyPercent: c.MaxUnhealthyPercent,
		Conditions: engine.Conditions(engine.Observed{State: c.Status, ReadyIn: store.StatusActive, Message: c.StatusReason,
			Op: c.LastOp, CreatedAt: c.CreatedAt}),
	}
	var statuses []apitypes.NodeBootstrap
	live := controlplane.LiveControlPlane(nodes)
	initial := initialOrdinal(live)
	for _, n := range nodes {
		if n.VMID == 0 {
			continue // an intended node of a founding: shown once its VM exists
		}
		v.ControlPlaneVMIDs = append(v.ControlPlaneVMIDs, n.VMID)
		view := nodepool.NodeViewOf(n)
		view.Retiring = n.Retiring
		v.Nodes = append(v.Nodes, view)
		statuses = append(statuses, progress.StatusOf(n.VMID, n.Name, n.PhaseMessage, timelineOf(n, initial)))
	}
	v.Bootstrap = progress.BootstrapOf(statuses)
	v.DNSRecords = controlplane.SuggestedRecords(c.ControlPlaneDNSName, live)
	if at, ok := controlplane.EndpointOf(&c, nodes); ok {
		v.EndpointVMID = at.VMID
	}
	roots := keyring.Resolved(&c) // each CA's expiry read once for both
	e := expiryOf(roots, nodes)
	v.CertificatesExpireAt, v.CAsExpireAt = e.leaves, e.cas
	v.CARoots = carotation.RootsOf(roots)
	if c.CARotation != nil {
		rot := carotation.ViewOf(c.ID, c.CARotation, m.Nodes)
		v.CARotation = &rot
	}
	v.NodePools = nodepool.Views(m.Pools, m.Nodes)
	v.Spec, v.Actual = filesOf(&c, v.NodePools)
	return v
}

// filesOf are c's kept cluster file and c as a file; either nil when its
// rows cannot be read as one (written only by k8sapi, so never in practice).
func filesOf(c *store.Cluster, pools []apitypes.NodePool) (kept, actual *apitypes.ClusterFile) {
	kept, _ = clusterspec.KeptFile(c)
	if f, err := clusterspec.ActualFile(c, pools); err == nil {
		actual = &f
	}
	return kept, actual
}

// healthView is viewOf with every node's health as judged now
// (internal/nodehealth): the reads' view.
func (s *Service) healthView(c store.Cluster, m store.Members) apitypes.ClusterView {
	v := viewOf(c, m)
	nodehealth.Annotate(&v, m.Nodes, s.Clock())
	return v
}

// timelineOf is n's bootstrap as recorded, initial being its cluster's
// initial node's ordinal.
func timelineOf(n store.Node, initial int) progress.Timeline {
	return progress.Timeline{Role: clusterfacts.RoleOf(n.Role), Phase: clusterfacts.Phase(n.Phase), OpenedAt: n.BootstrapOpenedAt, Reached: n.PhaseTimes,
		UpdatedAt: n.PhaseUpdatedAt, Initial: n.Ordinal == initial}
}

// initialOrdinal is the lowest ordinal among nodes: the initial node's,
// as the store judges it (the one that installs the addons).
func initialOrdinal(nodes []store.Node) int {
	if len(nodes) == 0 {
		return 0
	}
	return slices.MinFunc(nodes, func(a, b store.Node) int { return cmp.Compare(a.Ordinal, b.Ordinal) }).Ordinal
}

func resultOf(v apitypes.ClusterView, nodes []store.Node, kubeconfig string) *Result {
	return &Result{FoundingResult: apitypes.FoundingResult{
		ClusterID: v.ID, Name: v.Name, Status: v.Status, Kubeconfig: kubeconfig,
		ControlPlaneVMIDs: v.ControlPlaneVMIDs, ControlPlaneDNSName: v.ControlPlaneDNSName,
		ServiceCIDR: v.ServiceCIDR, PodCIDR: v.PodCIDR, CNI: v.CNI, KubernetesVersion: v.KubernetesVersion,
		KeyAlgorithm: v.KeyAlgorithm, DNSConfigured: v.DNSConfigured, DNSError: v.DNSError,
		BootstrapPathTemplate: bundle.PathTemplate,
		IngressWildcardDNS:    "*." + v.ControlPlaneDNSName,
		SuggestedDNSRecords:   controlplane.SuggestedRecords(v.ControlPlaneDNSName, nodes),
	}}
}
