package bundle

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// replacementCluster is the test cluster while cp-1 is being replaced by
// cp-4, a node made by the replacement.
func replacementCluster() (clusterfacts.Cluster, []clusterfacts.Node) {
	c, nodes := testCluster()
	for i := range nodes {
		nodes[i].Retiring = nodes[i].VMID == 101
	}
	return c, append(nodes, clusterfacts.Node{VMID: 104, Ordinal: 4, Name: "cp-4.cluster-42.internal", IPv4: "10.0.0.14", Joins: true})
}

// joinFiles are the files join mode renders differently: the etcd unit,
// the bootstrap script and the join script (none holds a key, so the
// goldens need no fixture PKI).
var joinFiles = []string{"etc/systemd/system/etcd.service", "usr/local/bin/exk8s-bootstrap-control-plane.sh", "usr/local/bin/exk8s-etcd-join.sh"}

// TestGoldenJoin: a node made by a replacement starts its etcd in an
// existing cluster, listing the members that stay and itself, after its
// join script removed the replaced member and added it as a learner, and
// promotes it once caught up. Golden files under testdata/golden/join.
func TestGoldenJoin(t *testing.T) {
	c, nodes := replacementCluster()
	in := issueClusterPKI(t, c, nodes, time.Now).input(c, nodes, 104)
	b, err := newTestRenderer(t).Render(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, p := range joinFiles {
		f, ok := b.File("/" + p)
		if !ok {
			t.Fatalf("join mode renders no %s", p)
		}
		got[p] = []byte(f.Content)
	}
	assertGoldenDir(t, filepath.Join(goldenDir, "join", "cp-4.cluster-42.internal"), got)
	want := "cp-2.cluster-42.internal=https://10.0.0.12:2380,cp-3.cluster-42.internal=https://10.0.0.13:2380,cp-4.cluster-42.internal=https://10.0.0.14:2380"
	if b.Metadata.EtcdInitialCluster != want {
		t.Errorf("initial cluster %s, want the members that stay and the joining node: %s", b.Metadata.EtcdInitialCluster, want)
	}
}

// A node that founded etcd renders no join script and starts etcd as a
// new cluster, even while a peer is being replaced.
func TestFoundingNodeDoesNotJoin(t *testing.T) {
	c, nodes := replacementCluster()
	in := issueClusterPKI(t, c, nodes, time.Now).input(c, nodes, 102)
	b, err := newTestRenderer(t).Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.File(EtcdJoinScript); ok {
		t.Errorf("a founding node's bundle has %s", EtcdJoinScript)
	}
	unit, _ := b.File("/etc/systemd/system/etcd.service")
	if !strings.Contains(unit.Content, "--initial-cluster-state=new ") {
		t.Errorf("a founding node's etcd does not start a new cluster:\n%s", unit.Content)
	}
}
