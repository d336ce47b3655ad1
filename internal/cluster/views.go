package cluster

import (
	"cmp"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/store"
)

// Result is the 201 body of POST /clusters.
type Result struct {
	ClusterID             int64                    `json:"cluster_id"`
	Name                  string                   `json:"name"`
	Status                string                   `json:"status"`
	Kubeconfig            string                   `json:"kubeconfig"`
	ControlPlaneVMIDs     []int64                  `json:"control_plane_vm_ids"`
	ControlPlaneDNSName   string                   `json:"control_plane_dns_name"`
	ServiceCIDR           string                   `json:"service_cidr"`
	PodCIDR               string                   `json:"pod_cidr"`
	CNI                   string                   `json:"cni"`
	KubernetesVersion     string                   `json:"kubernetes_version"`
	KeyAlgorithm          string                   `json:"key_algorithm"`
	DNSConfigured         bool                     `json:"dns_configured"`
	DNSError              string                   `json:"dns_error,omitempty"`
	BootstrapPathTemplate string                   `json:"bootstrap_path_template"`
	IngressWildcardDNS    string                   `json:"ingress_wildcard_dns_name"`
	SuggestedDNSRecords   []clusterfacts.DNSRecord `json:"suggested_dns_records"`
	// Replayed is true when an Idempotency-Key returned an earlier founding.
	Replayed bool `json:"-"`
	// Accepted is set when the founding goes on after the answer (202): it
	// is the body (the cluster to poll, no kubeconfig), and Key is the
	// Idempotency-Key to repeat the request with once the cluster is active.
	Accepted *ClusterView `json:"-"`
	Key      string       `json:"-"`
}

// ClusterView is a cluster as GET /clusters shows it: no keys, no kubeconfig.
type ClusterView struct {
	ID                  int64               `json:"cluster_id"`
	Name                string              `json:"name"`
	Status              string              `json:"status"`
	StatusReason        string              `json:"status_reason,omitempty"`
	ControlPlaneDNSName string              `json:"control_plane_dns_name"`
	ControlPlaneVMIDs   []int64             `json:"control_plane_vm_ids"`
	Nodes               []apitypes.NodeView `json:"nodes"`
	ServiceCIDR         string              `json:"service_cidr"`
	PodCIDR             string              `json:"pod_cidr"`
	CNI                 string              `json:"cni"`
	KubernetesVersion   string              `json:"kubernetes_version"`
	KeyAlgorithm        string              `json:"key_algorithm"`
	DNSConfigured       bool                `json:"dns_configured"`
	DNSError            string              `json:"dns_error,omitempty"`
	// RestoredFromSnapshotID is the etcd snapshot the cluster was founded
	// from; null for a cluster founded empty.
	RestoredFromSnapshotID *int64 `json:"restored_from_snapshot_id"`
	// Bootstrap is how far the nodes' bootstrap got, as the VMs report it.
	Bootstrap progress.Bootstrap `json:"bootstrap"`
	// CertificatesExpireAt is the earliest NotAfter among the nodes' stored
	// certificates (null before any is stored); renewal moves it.
	CertificatesExpireAt *time.Time `json:"certificates_expire_at"`
	// CAsExpireAt is each CA's NotAfter, by cert-table name; renewal never
	// moves them.
	CAsExpireAt map[pki.Name]time.Time `json:"cas_expire_at"`
	// NodePools are the cluster's live worker pools, each with its workers.
	NodePools []nodepool.PoolView `json:"node_pools"`
	CreatedAt time.Time           `json:"created_at"`
	UpdatedAt time.Time           `json:"updated_at"`
}

// viewOf is the cluster with its control-plane nodes (their bootstrap and
// expiry) and its pools with their workers.
func viewOf(c store.Cluster, m store.Members) ClusterView {
	nodes := controlplane.ControlPlaneOf(m.Nodes)
	v := ClusterView{
		ID: c.ID, Name: c.Name, Status: c.Status, StatusReason: c.StatusReason, ControlPlaneDNSName: c.ControlPlaneDNSName,
		ControlPlaneVMIDs: []int64{}, Nodes: []apitypes.NodeView{},
		ServiceCIDR: c.ServiceCIDR, PodCIDR: c.PodCIDR, CNI: c.CNI, KubernetesVersion: c.KubernetesVersion,
		KeyAlgorithm: c.KeyAlgorithm, DNSConfigured: c.DNSConfigured, DNSError: c.DNSError,
		RestoredFromSnapshotID: c.RestoredFromSnapshotID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	var statuses []progress.NodeStatus
	initial := initialOrdinal(controlplane.LiveControlPlane(nodes))
	for _, n := range nodes {
		if n.VMID == 0 {
			continue // an intended node of a founding: shown once its VM exists
		}
		v.ControlPlaneVMIDs = append(v.ControlPlaneVMIDs, n.VMID)
		v.Nodes = append(v.Nodes, apitypes.NodeView{VMID: n.VMID, Ordinal: n.Ordinal, Name: n.Name,
			IPv4: n.IPv4, IPv6: n.IPv6, PublicIPv4: n.PublicIPv4, Retiring: n.Retiring})
		statuses = append(statuses, progress.StatusOf(n.VMID, n.Name, n.PhaseMessage, timelineOf(n, initial)))
	}
	v.Bootstrap = progress.BootstrapOf(statuses)
	e := expiryOf(c, nodes)
	v.CertificatesExpireAt, v.CAsExpireAt = e.leaves, e.cas
	v.NodePools = nodepool.Views(m.Pools, m.Nodes)
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

func resultOf(v ClusterView, nodes []store.Node, kubeconfig string) *Result {
	return &Result{
		ClusterID: v.ID, Name: v.Name, Status: v.Status, Kubeconfig: kubeconfig,
		ControlPlaneVMIDs: v.ControlPlaneVMIDs, ControlPlaneDNSName: v.ControlPlaneDNSName,
		ServiceCIDR: v.ServiceCIDR, PodCIDR: v.PodCIDR, CNI: v.CNI, KubernetesVersion: v.KubernetesVersion,
		KeyAlgorithm: v.KeyAlgorithm, DNSConfigured: v.DNSConfigured, DNSError: v.DNSError,
		BootstrapPathTemplate: bundle.PathTemplate,
		IngressWildcardDNS:    "*." + v.ControlPlaneDNSName,
		SuggestedDNSRecords:   controlplane.SuggestedRecords(v.ControlPlaneDNSName, nodes),
	}
}
