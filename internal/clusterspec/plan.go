package clusterspec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/validation"
)

// Actions a plan's step takes, each through an existing route.
const (
	CreateCluster = "create cluster" // POST /clusters
	CreatePool    = "create pool"    // POST /clusters/{id}/node-pools
	ScalePool     = "scale pool"     // PATCH /clusters/{id}/node-pools/{pool}
	DeletePool    = "delete pool"    // DELETE /clusters/{id}/node-pools/{pool}
	KeepSpec      = "keep spec"      // PUT /clusters/{id}/spec (and the snapshot schedule)
	// ScaleControlPlane is a control_plane.count change: PATCH
	// /clusters/{id}, its use case's refusals and codes.
	ScaleControlPlane = "scale control plane"
	// Upgrade is a kubernetes_version change: POST /clusters/{id}/upgrade,
	// its plan (a chain of one-minor passes), gates and codes.
	Upgrade = "upgrade"
)

// Step is one thing a plan does: its action, what it acts on, and what
// changes (from → to), for the operator to read before saying yes.
type Step struct {
	Action string
	Target string
	Detail string
	Pool   *apitypes.ClusterFilePool // the pool created or scaled
	// Count is a control-plane scaling's new count, Version an upgrade's
	// target.
	Count   int
	Version string
}

// Plan is what applying f does to a cluster that is as actual says (nil:
// no cluster has f's name yet), kept being the file last applied to it
// (nil: none). Steps run in order: the cluster, the control plane's
// scaling, new pools, scaled pools, removed pools (only those the kept
// file had: apply never removes a pool it did not make), the file kept,
// then the upgrade. The scaling comes before the upgrade so the upgrade
// replaces members of a control plane that keeps its quorum while one is
// replaced; the upgrade comes last because the server holds off pool
// changes while it runs and it rolls every pool, the new ones too. The
// cluster runs one of these operations at a time, so an upgrade planned
// after a scaling waits for it (the CLI says so). No step: the cluster is
// as f asks. A difference no operation can reach (a field fixed at
// founding, a pool's instance type) refuses the whole plan, naming each.
func Plan(f apitypes.ClusterFile, actual, kept *apitypes.ClusterFile) ([]Step, error) {
	if err := ValidateFile(f); err != nil {
		return nil, err
	}
	if actual == nil {
		return foundingPlan(f)
	}
	scale, err := reachable(f, actual)
	if err != nil {
		return nil, err
	}
	steps := slices.Concat(scale, poolSteps(f, actual, kept))
	if len(steps) > 0 || !sameFile(f, kept) || scheduleDiffers(f, actual) {
		steps = append(steps, Step{Action: KeepSpec, Target: f.Name, Detail: keepDetail(f, actual)})
	}
	return append(steps, upgradeStep(f, actual)...), nil
}

// Refused is why no plan takes a cluster that is as actual says to f
// (nil: one does): a field no operation changes (400) or a count PATCH
// /clusters/{id} refuses (422 invalid_control_plane_count). PUT
// /clusters/{id}/spec keeps no file a plan would refuse.
func Refused(f apitypes.ClusterFile, actual *apitypes.ClusterFile) error {
	_, err := reachable(f, actual)
	return err
}

// reachable is the scaling f asks of actual, nil when no operation can
// take actual to f. A version to reach is one of the release table's (in
// the file's words; its path and gates are the upgrade's own, judged by
// its dry run); the cluster's own version is never refused.
func reachable(f apitypes.ClusterFile, actual *apitypes.ClusterFile) ([]Step, error) {
	if err := FixedDiffer(f, actual); err != nil {
		return nil, err
	}
	if upgradeStep(f, actual) != nil {
		r := FoundingRequest(f)
		if err := invalid([]validation.Rule{versionRule(r, r.withDefaults())}); err != nil {
			return nil, err
		}
	}
	return scaleStep(f, actual)
}

// scaleStep is the control plane's scaling when f asks another count,
// checked as PATCH /clusters/{id} checks it (the server's use case judges
// the rest: a shrink, a member not ready, another operation). An absent
// count asks for none in particular, as an absent version does: a file
// without one never shrinks a scaled cluster to the founding's default.
func scaleStep(f apitypes.ClusterFile, actual *apitypes.ClusterFile) ([]Step, error) {
	want, have := f.ControlPlane.Count, actual.ControlPlane.Count
	if want == 0 || want == have {
		return nil, nil
	}
	if _, err := (ClusterPatch{ControlPlaneCount: &want}).Count(); err != nil {
		return nil, err
	}
	return []Step{{Action: ScaleControlPlane, Target: f.Name, Detail: fmt.Sprintf("control-plane nodes %d → %d, one etcd member at a time", have, want),
		Count: want}}, nil
}

// upgradeStep is the upgrade when f names a version the cluster is not
// at; the passes and gates are the server's (POST /clusters/{id}/upgrade
// with dry_run), as is the refusal of a version it cannot move to.
func upgradeStep(f apitypes.ClusterFile, actual *apitypes.ClusterFile) []Step {
	if f.KubernetesVersion == "" || f.KubernetesVersion == actual.KubernetesVersion {
		return nil
	}
	return []Step{{Action: Upgrade, Target: f.Name, Detail: fmt.Sprintf("kubernetes %s → %s, one control-plane node at a time, then each pool by surge",
		actual.KubernetesVersion, f.KubernetesVersion), Version: f.KubernetesVersion}}
}

// foundingPlan founds the cluster, keeps its file, then makes its pools.
// The founding's count is 1 or 3 and its version one of the release
// table's (POST /clusters' rules, told in the file's words): 5 is reached
// by applying the file again once it is active.
func foundingPlan(f apitypes.ClusterFile) ([]Step, error) {
	r := FoundingRequest(f)
	cp := r.withDefaults()
	count := foundingCountRule(cp)
	count.Message += "; a cluster is founded with 1 or 3 and scaled to 5 by applying the file again once it is active"
	if err := invalid(renamed([]validation.Rule{count, versionRule(r, cp)}, fileFields, "")); err != nil {
		return nil, err
	}
	steps := []Step{
		{Action: CreateCluster, Target: f.Name, Detail: fmt.Sprintf("%d control-plane node(s) of %s, cni %s", cp.ControlPlaneCount, cp.ControlPlaneInstanceType, cp.CNI)},
		{Action: KeepSpec, Target: f.Name, Detail: "the file, and etcd snapshots " + intervalDetail(f)},
	}
	for _, p := range f.NodePools {
		steps = append(steps, Step{Action: CreatePool, Target: p.Name, Detail: fmt.Sprintf("%d worker(s) of %s", *p.Count, p.InstanceType), Pool: &p})
	}
	return steps, nil
}

// poolSteps: new pools, then scaled ones, then the removed ones.
func poolSteps(f apitypes.ClusterFile, actual, kept *apitypes.ClusterFile) []Step {
	var create, scale, remove []Step
	for _, p := range f.NodePools {
		have, ok := poolNamed(actual.NodePools, p.Name)
		switch {
		case !ok:
			create = append(create, Step{Action: CreatePool, Target: p.Name, Detail: fmt.Sprintf("%d worker(s) of %s", *p.Count, p.InstanceType), Pool: &p})
		case *have.Count != *p.Count:
			scale = append(scale, Step{Action: ScalePool, Target: p.Name, Detail: fmt.Sprintf("count %d → %d", *have.Count, *p.Count), Pool: &p})
		}
	}
	for _, p := range actual.NodePools {
		_, wanted := poolNamed(f.NodePools, p.Name)
		if _, managed := poolNamed(keptPools(kept), p.Name); !wanted && managed {
			remove = append(remove, Step{Action: DeletePool, Target: p.Name, Detail: fmt.Sprintf("%d worker(s)", *p.Count)})
		}
	}
	return slices.Concat(create, scale, remove)
}

func keptPools(kept *apitypes.ClusterFile) []apitypes.ClusterFilePool {
	if kept == nil {
		return nil
	}
	return kept.NodePools
}

func poolNamed(pools []apitypes.ClusterFilePool, name string) (apitypes.ClusterFilePool, bool) {
	i := slices.IndexFunc(pools, func(p apitypes.ClusterFilePool) bool { return p.Name == name })
	if i < 0 {
		return apitypes.ClusterFilePool{}, false
	}
	return pools[i], true
}

func scheduleDiffers(f apitypes.ClusterFile, actual *apitypes.ClusterFile) bool {
	want, _ := SnapshotIntervalOf(f)
	have, _ := SnapshotIntervalOf(*actual)
	return want != have
}

func keepDetail(f apitypes.ClusterFile, actual *apitypes.ClusterFile) string {
	if scheduleDiffers(f, actual) {
		have, _ := SnapshotIntervalOf(*actual)
		return fmt.Sprintf("the file, and etcd snapshots %s → %s", intervalText(have), intervalDetail(f))
	}
	return "the file"
}

func intervalDetail(f apitypes.ClusterFile) string {
	d, _ := SnapshotIntervalOf(f)
	return intervalText(d)
}

func intervalText(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return "every " + FormatInterval(d)
}

// sameFile: f is the file kept (so keeping it again changes nothing).
func sameFile(f apitypes.ClusterFile, kept *apitypes.ClusterFile) bool {
	return kept != nil && fingerprintOf(normalized(f)) == fingerprintOf(normalized(*kept))
}

// normalized is f with empty maps and lists as absent ones, so a file and
// its round trip through the server compare equal.
func normalized(f apitypes.ClusterFile) apitypes.ClusterFile {
	f.NodePools = slices.Clone(f.NodePools)
	for i, p := range f.NodePools {
		if len(p.Labels) == 0 {
			p.Labels = nil
		}
		if len(p.Taints) == 0 {
			p.Taints = nil
		}
		f.NodePools[i] = p
	}
	if len(f.SecurityGroupIDs) == 0 {
		f.SecurityGroupIDs = nil
	}
	return f
}

// fixedField is one thing a cluster keeps from its founding, read from a
// file with its defaults applied.
type fixedField struct {
	name string
	of   func(Spec) string
	// why the field cannot change, and what to do instead.
	why string
}

const refound = "fixed at founding: found a new cluster to change it"

// fixedFields are the fields a plan may not change. control_plane.count
// and kubernetes_version are not here: each is a step of the plan
// (scaleStep, upgradeStep).
var fixedFields = []fixedField{
	{"zone_id", func(s Spec) string { return strconv.FormatInt(s.ZoneID, 10) }, refound},
	{"subnet_id", func(s Spec) string { return strconv.FormatInt(s.SubnetID, 10) }, refound},
	{"security_group_ids", func(s Spec) string { return fmt.Sprint(s.SecurityGroupIDs) }, refound},
	{"cni", func(s Spec) string { return string(s.CNI) }, refound},
	{"key_algorithm", func(s Spec) string { return string(s.KeyAlgorithm) }, refound},
	{"control_plane.instance_type", func(s Spec) string { return s.ControlPlaneInstanceType }, refound},
	{"control_plane.image_id", func(s Spec) string { return strconv.FormatInt(s.ControlPlaneImageID, 10) }, refound},
	{"control_plane.allocate_public_ipv4", func(s Spec) string { return strconv.FormatBool(s.AllocatePublicIPv4) }, refound},
	{"control_plane.ssh_pubkey", func(s Spec) string { return s.SSHPubkey }, refound},
	{"control_plane.root_volume_size_gib", func(s Spec) string { return strconv.Itoa(s.RootVolumeSizeGiB) }, refound},
}

// FixedDiffer is the 400 naming every field f would change that no
// operation can (nil: none).
func FixedDiffer(f apitypes.ClusterFile, actual *apitypes.ClusterFile) error {
	if actual == nil {
		return apperr.NotFound.Detail("the cluster's rows cannot be read as a cluster file")
	}
	want, have := FoundingRequest(f).withDefaults(), FoundingRequest(*actual).withDefaults()
	var problems []string
	for _, ff := range fixedFields {
		if w, h := ff.of(want), ff.of(have); w != h {
			problems = append(problems, fmt.Sprintf("%s: the cluster has %q, the file asks %q: %s", ff.name, h, w, ff.why))
		}
	}
	problems = append(problems, fixedPoolProblems(f, actual)...)
	if len(problems) > 0 {
		return apperr.InvalidRequest.Detail(strings.Join(problems, "; "))
	}
	return nil
}

// fixedPoolProblems: a pool keeps all but its count; another shape is
// another pool.
func fixedPoolProblems(f apitypes.ClusterFile, actual *apitypes.ClusterFile) []string {
	var problems []string
	for i, p := range f.NodePools {
		have, ok := poolNamed(actual.NodePools, p.Name)
		if !ok {
			continue
		}
		p.SubnetID, have.SubnetID = orSubnet(p.SubnetID, actual.SubnetID), orSubnet(have.SubnetID, actual.SubnetID)
		for _, d := range poolDifferences(p, have) {
			problems = append(problems, fmt.Sprintf("node_pools[%d].%s: pool %q has %s, the file asks %s: only a pool's count changes (add a pool of another name and remove this one)",
				i, d.field, p.Name, d.have, d.want))
		}
	}
	return problems
}

// orSubnet is a pool's subnet, 0 being the cluster's.
func orSubnet(pool, cluster int64) int64 {
	if pool == 0 {
		return cluster
	}
	return pool
}

type difference struct{ field, have, want string }

func poolDifferences(want, have apitypes.ClusterFilePool) []difference {
	var out []difference
	add := func(field string, w, h any) {
		if ws, hs := fmt.Sprint(w), fmt.Sprint(h); ws != hs {
			out = append(out, difference{field, hs, ws})
		}
	}
	add("instance_type", want.InstanceType, have.InstanceType)
	add("image_id", want.ImageID, have.ImageID)
	add("subnet_id", want.SubnetID, have.SubnetID)
	add("labels", want.Labels, have.Labels) // maps print with sorted keys
	add("taints", want.Taints, have.Taints)
	return out
}
