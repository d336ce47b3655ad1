package clusterspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/validation"
)

// Bounds of a cluster file's snapshot interval (migration 016's CHECK).
const (
	MinSnapshotInterval = 5 * time.Minute
	MaxSnapshotInterval = 7 * 24 * time.Hour
	// DefaultSnapshotInterval is a cluster's schedule when its file names
	// none (migration 016's default).
	DefaultSnapshotInterval = time.Hour
)

// fileFields are the POST /clusters fields a cluster file spells under
// control_plane: the founding rules name the request's field, a file's
// problem is told by the file's.
var fileFields = map[string]string{
	"control_plane_count":         "control_plane.count",
	"control_plane_image_id":      "control_plane.image_id",
	"control_plane_instance_type": "control_plane.instance_type",
	"allocate_public_ipv4":        "control_plane.allocate_public_ipv4",
	"ssh_pubkey":                  "control_plane.ssh_pubkey",
	"root_volume_size_gib":        "control_plane.root_volume_size_gib",
}

var clusterNamePattern = poolNamePattern

// ValidateFile returns every problem of a cluster file at once as one 400:
// its own rules (kind, name, pools named once, the schedule, a count a
// cluster may have), POST /clusters' rules over its founding fields but
// the count, and a pool create's rules over each pool. The CLI runs it
// before planning and the API before keeping a spec, so both refuse the
// same file with the same words. The count is any a cluster may have (1
// to MaxControlPlaneCount), not a founding's (1 or 3): a cluster scaled
// to 5 has a file of 5, and one whose scaling failed keeping the nodes it
// made may have 2 or 4 (docs/SCALE-CONTROL-PLANE.md); and the version is
// any, as a cluster stays at a release the table has since dropped: so a
// cluster's own file is never refused. A count or a version to reach is
// held to its operation's rule by the plan: a founding's (foundingPlan),
// a scaling's (scaleStep, PATCH's own check), an upgrade's (reachable).
func ValidateFile(f apitypes.ClusterFile) error {
	tables := [][]validation.Rule{fileRules(f),
		renamed(withoutFields(foundingRules(FoundingRequest(f)), "control_plane_count", "kubernetes_version"), fileFields, "")}
	for i, p := range f.NodePools {
		req := PoolRequestOf(p)
		for _, t := range req.rules(req.spec()) {
			tables = append(tables, renamed(t, nil, fmt.Sprintf("node_pools[%d].", i)))
		}
	}
	return invalid(tables...)
}

// foundingRules are POST /clusters' tables over r.
func foundingRules(r Request) []validation.Rule {
	s := r.withDefaults()
	var all []validation.Rule
	for _, t := range [][]validation.Rule{requestRules(r, s), securityGroupRules(r.SecurityGroupIDs), optionRules(r, s)} {
		all = append(all, t...)
	}
	return all
}

// withoutFields is rules but those of fields.
func withoutFields(rules []validation.Rule, fields ...string) []validation.Rule {
	return slices.DeleteFunc(slices.Clone(rules), func(r validation.Rule) bool { return slices.Contains(fields, r.Field) })
}

// fileRules: what only a file has.
func fileRules(f apitypes.ClusterFile) []validation.Rule {
	_, intervalErr := SnapshotIntervalOf(f)
	count := FoundingRequest(f).withDefaults().ControlPlaneCount
	rules := []validation.Rule{
		rule("control_plane.count", count >= 1 && count <= MaxControlPlaneCount,
			fmt.Sprintf("must be 1 to %d (a cluster is founded with 1 or 3 and scaled to 3 or 5)", MaxControlPlaneCount)),
		rule("kind", f.Kind == apitypes.ClusterFileKind, "must be "+apitypes.ClusterFileKind),
		rule("name", f.Name != "", "is required"),
		rule("name", f.Name == "" || clusterNamePattern.MatchString(f.Name),
			fmt.Sprintf("must be a DNS label: lowercase letters, digits and '-', starting with a letter, at most %d characters", MaxPoolNameLen)),
		rule("etcd_snapshots.interval", intervalErr == nil, validation.Describe(intervalErr)),
	}
	for i, p := range f.NodePools {
		rules = append(rules, rule(fmt.Sprintf("node_pools[%d].name", i), !repeatsName(f.NodePools[:i], p.Name), "repeats an earlier pool's name"))
	}
	return rules
}

func repeatsName(pools []apitypes.ClusterFilePool, name string) bool {
	for _, p := range pools {
		if p.Name == name {
			return true
		}
	}
	return false
}

// renamed is rules with each field renamed by names (when listed) and
// prefixed.
func renamed(rules []validation.Rule, names map[string]string, prefix string) []validation.Rule {
	out := make([]validation.Rule, len(rules))
	for i, r := range rules {
		if n, ok := names[r.Field]; ok {
			r.Field = n
		}
		r.Field = prefix + r.Field
		out[i] = r
	}
	return out
}

// FoundingRequest is the POST /clusters body a file founds its cluster
// with.
func FoundingRequest(f apitypes.ClusterFile) Request {
	cp := f.ControlPlane
	r := Request{ControlPlaneInstanceType: &cp.InstanceType, AllocatePublicIPv4: &cp.AllocatePublicIPv4,
		SecurityGroupIDs: f.SecurityGroupIDs, SSHPubkey: &cp.SSHPubkey}
	r.ControlPlaneCount = nonZero(cp.Count)
	r.ControlPlaneImageID = nonZero(cp.ImageID)
	r.ZoneID = nonZero(f.ZoneID)
	r.SubnetID = nonZero(f.SubnetID)
	r.RootVolumeSizeGiB = nonZero(cp.RootVolumeSizeGiB)
	r.KeyAlgorithm = nonZero(f.KeyAlgorithm)
	r.CNI = nonZero(f.CNI)
	r.KubernetesVersion = nonZero(f.KubernetesVersion)
	return r
}

// PoolRequestOf is the POST /clusters/{id}/node-pools body of a file's pool.
func PoolRequestOf(p apitypes.ClusterFilePool) PoolRequest {
	return PoolRequest{Name: &p.Name, Count: p.Count, InstanceType: &p.InstanceType, ImageID: nonZero(p.ImageID),
		SubnetID: nonZero(p.SubnetID), Labels: p.Labels, Taints: p.Taints}
}

// nonZero is a pointer to v, nil for v's zero value (a file's absent
// field).
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// SnapshotIntervalOf is the schedule f asks for: DefaultSnapshotInterval
// when it names none, 0 for none.
func SnapshotIntervalOf(f apitypes.ClusterFile) (time.Duration, error) {
	if f.EtcdSnapshots == nil {
		return DefaultSnapshotInterval, nil
	}
	d, err := time.ParseDuration(f.EtcdSnapshots.Interval)
	if err != nil || d != 0 && (d < MinSnapshotInterval || d > MaxSnapshotInterval) || d%time.Second != 0 {
		return 0, fmt.Errorf("must be 0 (no schedule) or a duration from %s to %s, such as 1h or 30m", MinSnapshotInterval, "168h")
	}
	return d, nil
}

// FormatInterval is d as a file spells it ("1h", "90m", "0").
func FormatInterval(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// ActualFile is cluster c as a cluster file: its founding's fields, its
// control plane's count, its live pools and its snapshot schedule, named
// as its kept file names it (else by c's own name). A second apply of
// the file a cluster was made from finds nothing to change in it.
func ActualFile(c *store.Cluster, pools []apitypes.NodePool) (apitypes.ClusterFile, error) {
	spec, err := Of(c)
	if err != nil {
		return apitypes.ClusterFile{}, err
	}
	f := apitypes.ClusterFile{Kind: apitypes.ClusterFileKind, Name: c.Name, KubernetesVersion: c.KubernetesVersion,
		ControlPlane: apitypes.ClusterFileCP{Count: c.ControlPlaneCount, InstanceType: spec.ControlPlaneInstanceType,
			ImageID: spec.ControlPlaneImageID, AllocatePublicIPv4: spec.AllocatePublicIPv4, SSHPubkey: spec.SSHPubkey,
			RootVolumeSizeGiB: spec.RootVolumeSizeGiB},
		ZoneID: spec.ZoneID, SubnetID: spec.SubnetID, SecurityGroupIDs: spec.SecurityGroupIDs, CNI: c.CNI, KeyAlgorithm: c.KeyAlgorithm,
		EtcdSnapshots: &apitypes.ClusterFileSnapshots{Interval: FormatInterval(time.Duration(c.SnapshotIntervalSeconds) * time.Second)}}
	kept, err := KeptFile(c)
	if kept != nil {
		f.Name = kept.Name
	}
	for _, p := range pools {
		f.NodePools = append(f.NodePools, filePoolOf(p))
	}
	return f, err
}

// KeptFile is the cluster file last applied to c; nil when none was.
func KeptFile(c *store.Cluster) (*apitypes.ClusterFile, error) {
	if c.Spec == nil {
		return nil, nil
	}
	var f apitypes.ClusterFile
	if err := json.Unmarshal(c.Spec, &f); err != nil {
		return nil, fmt.Errorf("reading the kept spec of cluster %d: %w", c.ID, err)
	}
	return &f, nil
}

// filePoolOf is a live pool as a file asks for it.
func filePoolOf(p apitypes.NodePool) apitypes.ClusterFilePool {
	count := p.Count
	return apitypes.ClusterFilePool{Name: p.Name, Count: &count, InstanceType: p.InstanceType, ImageID: p.ImageID,
		SubnetID: p.SubnetID, Labels: p.Labels, Taints: p.Taints}
}
