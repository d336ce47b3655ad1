package apitypes

// ClusterFileKind is the kind a cluster file names.
const ClusterFileKind = "Cluster"

// ClusterFile is a cluster as its operator declares it: the file
// `k8sapi apply -f` reads (as YAML with these keys), the body of
// PUT /clusters/{id}/spec, and the spec GET /clusters/{id} shows beside
// the cluster's status. Fields other work adds later (remediation
// settings, upgrades) join it as fields of their own; a file naming a key
// this version does not know is refused, never silently ignored.
type ClusterFile struct {
	Kind string `json:"kind"`
	// Name is the operator's name for the cluster, unique among the org's
	// clusters that are not deleted.
	Name              string                `json:"name"`
	KubernetesVersion string                `json:"kubernetes_version,omitempty"`
	ControlPlane      ClusterFileCP         `json:"control_plane"`
	ZoneID            int64                 `json:"zone_id,omitempty"`
	SubnetID          int64                 `json:"subnet_id"`
	SecurityGroupIDs  []int64               `json:"security_group_ids,omitempty"`
	CNI               string                `json:"cni,omitempty"`
	KeyAlgorithm      string                `json:"key_algorithm,omitempty"`
	NodePools         []ClusterFilePool     `json:"node_pools,omitempty"`
	EtcdSnapshots     *ClusterFileSnapshots `json:"etcd_snapshots,omitempty"`
}

// ClusterFileCP is the control plane a cluster file asks for.
type ClusterFileCP struct {
	Count              int    `json:"count,omitempty"`
	InstanceType       string `json:"instance_type"`
	ImageID            int64  `json:"image_id"`
	AllocatePublicIPv4 bool   `json:"allocate_public_ipv4,omitempty"`
	SSHPubkey          string `json:"ssh_pubkey,omitempty"`
	RootVolumeSizeGiB  int    `json:"root_volume_size_gib,omitempty"`
}

// ClusterFilePool is one worker pool a cluster file asks for. Count is a
// pointer: 0 workers is a count, an absent count an error.
type ClusterFilePool struct {
	Name         string            `json:"name"`
	Count        *int              `json:"count"`
	InstanceType string            `json:"instance_type"`
	ImageID      int64             `json:"image_id"`
	SubnetID     int64             `json:"subnet_id,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []Taint           `json:"taints,omitempty"`
}

// ClusterFileSnapshots is the etcd snapshot schedule: Interval a Go
// duration ("1h", "30m"), "0" for none; absent, the deployment's default
// (every hour).
type ClusterFileSnapshots struct {
	Interval string `json:"interval"`
}
