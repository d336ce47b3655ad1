package bundle

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
)

// testWorker is VM 102 as a worker of pool "web" of c (ordinal 4, after
// the control plane), beside c's other nodes as its control plane: the
// fake VM proves VM 102.
func testWorker(c clusterfacts.Cluster) ([]clusterfacts.Node, clusterfacts.Node) {
	_, nodes := testCluster()
	var cp []clusterfacts.Node
	for _, n := range nodes {
		if n.VMID != 102 {
			cp = append(cp, n)
		}
	}
	return cp, clusterfacts.Node{VMID: 102, Ordinal: 4, Name: "web-4.cluster-42.internal", IPv4: "10.0.0.14", IPv6: "fd00::14"}
}

// workerInput is testWorker's input under c, with the fixtures' cluster CA.
func workerInput(t testing.TB, c clusterfacts.Cluster) WorkerInput {
	t.Helper()
	cp, w := testWorker(c)
	return WorkerInput{Cluster: c, ControlPlane: cp, Worker: w, Pool: "web", Artifacts: artifacts.Default(),
		Labels: map[string]string{"tier": "web", "node.kubernetes.io/pool": "web"},
		Taints: []Taint{{Key: "dedicated", Value: "web", Effect: "NoSchedule"}, {Key: "spot", Effect: "PreferNoSchedule"}},
		CACert: []byte(loadFixtures(t).CACerts[pki.ClusterCA])}
}

// fileIn is the content of the file at path among files.
func fileIn(t *testing.T, files []File, path string) string {
	t.Helper()
	b := Bundle{Files: files}
	return mustFile(t, &b, path)
}

// A worker's files and shim, as golden files under testdata/golden/worker:
// its Cilium cluster's files (cilium), what each other CNI changes in them
// (bridge, flannel: as TestGoldenCNIs does for the control plane) and its
// shim (userdata).
func TestGoldenWorker(t *testing.T) {
	r := newTestRenderer(t)
	c, _ := testCluster()
	cilium, err := r.RenderWorker(workerInput(t, c))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, f := range cilium {
		got[strings.TrimPrefix(f.Path, "/")] = []byte(f.Content)
	}
	contents, modes := FileMaps(cilium)
	wire, err := json.MarshalIndent(map[string]any{"files": contents, "file_modes": modes}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got["files.json"] = append(wire, '\n')
	assertGoldenDir(t, filepath.Join(goldenDir, "worker", "cilium"), got)
	for _, cni := range clusterfacts.CNIs()[1:] {
		other := c
		other.CNI = cni
		files, err := r.RenderWorker(workerInput(t, other))
		if err != nil {
			t.Fatal(err)
		}
		assertGoldenDir(t, filepath.Join(goldenDir, "worker", string(cni)), changedFiles(&Bundle{Files: cilium}, &Bundle{Files: files}))
	}
	ud, err := r.Userdata(UserdataInput{BootstrapBaseURL: "https://k8sapi.excloud.in", Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	assertGoldenDir(t, filepath.Join(goldenDir, "worker", "userdata"), map[string][]byte{"bootstrap-userdata.sh": []byte(ud)})
}

// A worker's bundle holds no private key, no kubeconfig, no etcd and no
// static pod: of the cluster's trust, the CA's certificate alone; and its
// kubelet registers with its pool's labels and taints.
func TestWorkerBundleHoldsNoKey(t *testing.T) {
	files, err := newTestRenderer(t).RenderWorker(workerInput(t, testClusterOnly()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f.Content, "PRIVATE KEY") || strings.Contains(f.Content, "system:masters") {
			t.Errorf("%s holds key material or an admin identity", f.Path)
		}
		for _, forbidden := range []string{kubeconfigDir + "/", staticPodDir + "/", unitDir + "/etcd", "-key.pem"} {
			if strings.Contains(f.Path, forbidden) {
				t.Errorf("a worker's bundle writes %s", f.Path)
			}
		}
		if strings.HasPrefix(f.Path, pkiDir+"/") && f.Path != CertPath(pki.ClusterCA) {
			t.Errorf("a worker's bundle writes %s: only the cluster CA's certificate belongs there", f.Path)
		}
	}
	unit := fileIn(t, files, unitDir+"/kubelet.service")
	for _, flag := range []string{"--node-labels=k8sapi.excloud.in/node-pool=web,node.kubernetes.io/pool=web,tier=web \\\n",
		"--register-with-taints=dedicated=web:NoSchedule,spot=:PreferNoSchedule\n", "--hostname-override=web-4.cluster-42.internal"} {
		if !strings.Contains(unit, flag) {
			t.Errorf("kubelet.service lacks %q:\n%s", flag, unit)
		}
	}
	env := fileIn(t, files, configDir+"/cluster.env")
	if !strings.Contains(env, "NODE_ROLE=worker\n") || strings.Contains(env, "ETCD") || strings.Contains(env, "HELM") {
		t.Errorf("a worker's cluster.env:\n%s", env)
	}
}

func testClusterOnly() clusterfacts.Cluster { c, _ := testCluster(); return c }

// A worker's input is refused with every bad field named.
func TestWorkerInputRules(t *testing.T) {
	in := workerInput(t, testClusterOnly())
	in.Labels = map[string]string{"tier": "web\nExecStartPre=/bin/sh"}
	in.Taints = []Taint{{Key: "a b", Effect: "NoSchedule"}, {Key: "ok", Effect: "Never"}}
	in.CACert, in.Pool, in.ControlPlane = nil, "Web", nil
	_, err := newTestRenderer(t).RenderWorker(in)
	if err == nil {
		t.Fatal("a bad worker input rendered")
	}
	for _, field := range []string{"control_plane: must list", "ca_cert: missing", `pool: must be a lowercase DNS label, got "Web"`,
		"labels[tier]: must be a label key and value", "taints[0]: must be a taint", "taints[1]: must be a taint"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error lacks %q:\n%v", field, err)
		}
	}
}
