package clusterspec

import (
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
)

func exampleFile() apitypes.ClusterFile {
	two := 2
	return apitypes.ClusterFile{Kind: "Cluster", Name: "demo", SubnetID: 1,
		ControlPlane: apitypes.ClusterFileCP{InstanceType: "e2.medium", ImageID: 1},
		NodePools:    []apitypes.ClusterFilePool{{Name: "workers", Count: &two, InstanceType: "e2.medium", ImageID: 1}}}
}

// A file's problems are told in the file's own field names, the founding
// and pool rules included, all at once.
func TestValidateFileNamesTheFilesFields(t *testing.T) {
	f := exampleFile()
	f.Kind, f.Name = "Clustr", "Demo"
	f.ControlPlane.Count, f.ControlPlane.InstanceType = 6, ""
	f.NodePools = append(f.NodePools, apitypes.ClusterFilePool{Name: "workers", InstanceType: "e2.medium", ImageID: 1})
	f.EtcdSnapshots = &apitypes.ClusterFileSnapshots{Interval: "1m"}
	err := ValidateFile(f)
	for _, want := range []string{"kind: must be Cluster", "name: must be a DNS label", "etcd_snapshots.interval: must be 0 (no schedule) or a duration from 5m0s to 168h",
		"node_pools[1].name: repeats an earlier pool's name", "control_plane.count: must be 1 to 5", "control_plane.instance_type: is required",
		"node_pools[1].count: is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in %v", want, err)
		}
	}
	if err := ValidateFile(exampleFile()); err != nil {
		t.Fatal(err)
	}
}

func TestPlan(t *testing.T) {
	f := exampleFile()
	steps, err := Plan(f, nil, nil)
	if err != nil || actions(steps) != "create cluster demo, keep spec demo, create pool workers" {
		t.Fatalf("founding plan: %s %v", actions(steps), err)
	}
	actual := exampleFile()
	actual.ControlPlane.Count, actual.ZoneID, actual.CNI, actual.KeyAlgorithm, actual.KubernetesVersion = 1, 1, "cilium", "ecdsa-p256", "v1.35.4"
	actual.EtcdSnapshots = &apitypes.ClusterFileSnapshots{Interval: "1h"}
	kept := exampleFile()
	if steps, err := Plan(f, &actual, &kept); err != nil || len(steps) != 0 {
		t.Fatalf("the same file: %s %v", actions(steps), err)
	}
	three, zero := 3, 0
	f.NodePools[0].Count = &three
	f.NodePools = append(f.NodePools, apitypes.ClusterFilePool{Name: "gpu", Count: &zero, InstanceType: "c1.large", ImageID: 1})
	actual.NodePools = append(actual.NodePools, apitypes.ClusterFilePool{Name: "old", Count: &zero}, apitypes.ClusterFilePool{Name: "manual", Count: &zero})
	kept.NodePools = append(kept.NodePools, apitypes.ClusterFilePool{Name: "old", Count: &zero})
	steps, err = Plan(f, &actual, &kept)
	if err != nil || actions(steps) != "create pool gpu, scale pool workers, delete pool old, keep spec demo" {
		t.Fatalf("changes: %s %v (a pool apply did not make is never deleted)", actions(steps), err)
	}
	if steps[1].Detail != "count 2 → 3" {
		t.Fatalf("scale detail %q", steps[1].Detail)
	}
}

func TestPlanRefusesWhatNoOperationChanges(t *testing.T) {
	actual := exampleFile()
	actual.KubernetesVersion = "v1.35.4"
	f := exampleFile()
	f.CNI, f.ControlPlane.Count, f.NodePools[0].InstanceType = "flannel", 3, "c1.large"
	_, err := Plan(f, &actual, nil)
	for _, want := range []string{`cni: the cluster has "cilium", the file asks "flannel": fixed at founding`,
		`node_pools[0].instance_type: pool "workers" has e2.medium, the file asks c1.large: only a pool's count changes`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "control_plane.count") {
		t.Errorf("the count is a scaling now, not a fixed field: %v", err)
	}
}

// A control_plane.count change is the control plane's scaling and a
// kubernetes_version change the upgrade, in that order, the upgrade last
// of all (after the pools and the file kept): the server holds off pool
// changes while an upgrade runs.
func TestPlanScalesTheControlPlaneThenUpgrades(t *testing.T) {
	actual := exampleFile()
	actual.ControlPlane.Count, actual.KubernetesVersion = 1, "v1.35.4"
	kept := exampleFile()
	f := exampleFile()
	three := 3
	f.ControlPlane.Count, f.KubernetesVersion, f.NodePools[0].Count = 3, "v1.36.3", &three
	steps, err := Plan(f, &actual, &kept)
	if err != nil || actions(steps) != "scale control plane demo, scale pool workers, keep spec demo, upgrade demo" {
		t.Fatalf("plan: %s %v", actions(steps), err)
	}
	if s := steps[0]; s.Count != 3 || s.Detail != "control-plane nodes 1 → 3, one etcd member at a time" {
		t.Errorf("scaling step %+v", s)
	}
	if s := steps[3]; s.Version != "v1.36.3" || !strings.HasPrefix(s.Detail, "kubernetes v1.35.4 → v1.36.3") {
		t.Errorf("upgrade step %+v", s)
	}
	f = exampleFile()
	f.KubernetesVersion = "v1.36.3"
	if steps, err := Plan(f, &actual, &kept); err != nil || actions(steps) != "keep spec demo, upgrade demo" {
		t.Fatalf("only the version: %s %v", actions(steps), err)
	}
}

// A cluster scaled to 5 has a file of 5, and one whose scaling failed
// keeping the node it made a file of 2: each cluster's own file is valid
// and plans nothing. A count to reach is held to its operation's rule: a
// founding's 1 or 3, the file's words naming how to reach 5; a scaling's
// 1, 3 or 5, PATCH's 422.
func TestAClustersOwnFileIsValid(t *testing.T) {
	for _, n := range []int{5, 2} {
		f := exampleFile()
		f.ControlPlane.Count, f.KubernetesVersion = n, "v1.35.4"
		if err := ValidateFile(f); err != nil {
			t.Fatalf("the file of a cluster of %d: %v", n, err)
		}
		if steps, err := Plan(f, &f, &f); err != nil || len(steps) != 0 {
			t.Fatalf("its own file of %d: %s %v", n, actions(steps), err)
		}
		if err := Refused(f, &f); err != nil {
			t.Fatalf("its own file of %d refused: %v", n, err)
		}
	}
	f := exampleFile()
	f.ControlPlane.Count = 5
	_, err := Plan(f, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "control_plane.count: must be 1 or 3") || !strings.Contains(err.Error(), "applying the file again once it is active") {
		t.Fatalf("founding at 5: %v", err)
	}
	actual := exampleFile()
	actual.ControlPlane.Count, f.ControlPlane.Count = 1, 2
	_, err = Plan(f, &actual, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid_control_plane_count: control_plane_count must be 1, 3 or 5, not 2") || Refused(f, &actual) == nil {
		t.Fatalf("scaling to 2: %v", err)
	}
	f.ControlPlane.Count = 0
	actual.ControlPlane.Count = 3
	if steps, err := Plan(f, &actual, nil); err != nil || actions(steps) != "keep spec demo" {
		t.Fatalf("an absent count shrank a cluster of 3: %s %v", actions(steps), err)
	}
}

// A cluster stays at a release the table has since dropped: its own file
// is valid; a version to reach, founding at or upgrading to, is the
// table's.
func TestAClusterAtADroppedReleaseHasItsFile(t *testing.T) {
	f := exampleFile()
	f.KubernetesVersion = "v1.20.0"
	if steps, err := Plan(f, &f, &f); err != nil || len(steps) != 0 {
		t.Fatalf("its own file: %s %v", actions(steps), err)
	}
	for _, actual := range []*apitypes.ClusterFile{nil, ptrTo(exampleFile())} {
		if actual != nil {
			actual.KubernetesVersion = "v1.35.4"
		}
		_, err := Plan(f, actual, nil)
		if err == nil || !strings.Contains(err.Error(), "kubernetes_version: must be a supported Kubernetes version") {
			t.Errorf("reaching v1.20.0 from %+v: %v", actual, err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func actions(steps []Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Action+" "+s.Target)
	}
	return strings.Join(out, ", ")
}
