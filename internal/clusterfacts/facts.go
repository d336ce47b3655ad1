package clusterfacts

import "github.com/excloud/k8sapi/internal/pki"

// Cluster is the cluster-wide facts every use case reads: who owns it, its
// names, the versions and algorithm it was founded with, and its networks.
type Cluster struct {
	OrgID, ID           int64
	Name                string // exk8s-7-2a
	ControlPlaneDNSName string // exk8s-7-2a.k8s.excloud.co.in
	KubernetesVersion   string // v1.35.4
	ClusterDomain       string // cluster.local
	ServiceCIDR         string // 10.96.0.0/12
	PodCIDR             string // 172.16.0.0/12
	CNI                 CNI    // cilium or bridge
	// Algorithm is the key algorithm of every key of the cluster, chosen
	// at founding.
	Algorithm pki.Algorithm
	// Restored: the cluster was founded from an etcd snapshot (restore_from),
	// so its founding nodes start etcd from it (docs/ETCD-SNAPSHOTS.md).
	Restored bool
}

// Node is one control-plane node of the cluster: where it stands in the
// control plane and its VM's addresses.
type Node struct {
	VMID       int64
	Ordinal    int    // 1-based position in the control plane; the lowest is the initial node
	Name       string // cp-1.cluster-42.internal
	IPv4       string // private address every component binds to
	IPv6       string // optional
	PublicIPv4 string // optional
	// Retiring: the node is being replaced (its etcd member is removed by
	// the node replacing it). Joins: the node was made by a replacement or
	// a control-plane scaling,
	// so its etcd joins the running cluster instead of founding it.
	Retiring, Joins bool
}
