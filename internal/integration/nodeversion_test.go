package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// Every node records the version its bundle is rendered for (issue 38):
// a founding's and a pool's nodes take their cluster's, and a node at
// another release (as an upgrade makes one) is rendered for its own: its
// binaries, its CoreDNS and pause, while its peers stay at theirs.
// GET /clusters/{id} shows each node's version.
func TestEveryNodeRendersItsOwnVersion(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	pool := s.AddPool(1, res.ClusterID, `{"name":"web","count":1,"instance_type":"e2.medium","image_id":1,"subnet_id":1}`)
	moved, stays := res.ControlPlaneVMIDs[0], res.ControlPlaneVMIDs[1]
	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_nodes SET kubernetes_version = 'v1.36.3' WHERE vm_id = $1`, moved); err != nil {
		t.Fatal(err)
	}
	s.bundles.Artifacts.DigestFallback = true // v1.36.3's files are not in the shipped manifest yet

	for vm, want := range map[int64][]string{moved: {"v1.36.3", "coredns/coredns:v1.14.2", "pause:3.10.2"},
		stays: {"v1.35.4", "coredns/coredns:v1.13.1", "pause:3.10.1"}} {
		files := s.bundleFiles(vm)
		if env := files["/etc/exk8s/config/cluster.env"]; !strings.Contains(env, want[0]) {
			t.Errorf("vm %d's cluster.env lacks %s:\n%s", vm, want[0], env)
		}
		all := strings.Join(mapValues(files), "\n")
		for _, w := range want[1:] {
			if !strings.Contains(all, w) {
				t.Errorf("no file of vm %d's bundle names %s", vm, w)
			}
		}
	}

	var view apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", s.Bearer(1)).JSON(t, &view)
	for _, n := range view.Nodes {
		if want := map[bool]string{true: "v1.36.3", false: "v1.35.4"}[n.VMID == moved]; n.KubernetesVersion != want {
			t.Errorf("node %s shows %q, want %s", n.Name, n.KubernetesVersion, want)
		}
	}
	if len(view.NodePools) != 1 || len(view.NodePools[0].Nodes) != len(pool.Nodes) {
		t.Fatalf("pools %+v", view.NodePools)
	}
	for _, w := range view.NodePools[0].Nodes {
		if w.KubernetesVersion != "v1.35.4" {
			t.Errorf("worker %s shows %q, want its cluster's v1.35.4", w.Name, w.KubernetesVersion)
		}
	}
}
