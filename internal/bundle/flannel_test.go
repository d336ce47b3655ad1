package bundle

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/artifacts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// flannelNode is a folder laid out as a node's root for the rendered
// exk8s-flannel-cni.sh: the script and the shell library it sources.
type flannelNode struct{ root, script string }

func newFlannelNode(t *testing.T) flannelNode {
	t.Helper()
	requireTools(t, "bash", "jq")
	c, nodes := flannelCluster()
	b, err := newTestRenderer(t).Render(loadFixtures(t).input(c, nodes, 101))
	if err != nil {
		t.Fatal(err)
	}
	n := flannelNode{root: t.TempDir()}
	n.script = filepath.Join(n.root, "usr/local/bin/exk8s-flannel-cni.sh")
	for _, p := range []string{binDir + "/exk8s-flannel-cni.sh", binDir + "/exk8s-progress.sh"} {
		n.write(t, p, mustFile(t, b, p))
	}
	return n
}

func (n flannelNode) write(t *testing.T, path, content string) {
	t.Helper()
	p := filepath.Join(n.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// run runs the script as its unit does and returns its log.
func (n flannelNode) run(t *testing.T, wantOK bool) string {
	t.Helper()
	cmd := exec.Command("bash", n.script)
	cmd.Env = append(os.Environ(), "EXK8S_ROOT="+n.root)
	out, err := cmd.CombinedOutput()
	if (err == nil) != wantOK {
		t.Fatalf("exk8s-flannel-cni.sh: %v (want success %v)\n%s", err, wantOK, out)
	}
	return string(out)
}

// raw is the conflist's content, whatever it holds ("" when there is none).
func (n flannelNode) raw() string {
	raw, _ := os.ReadFile(filepath.Join(n.root, conflistPath))
	return string(raw)
}

// conflist reads the conflist the script wrote; nil when there is none.
func (n flannelNode) conflist(t *testing.T) (*conflist, string) {
	t.Helper()
	raw := n.raw()
	if raw == "" {
		return nil, ""
	}
	var conf conflist
	if err := json.Unmarshal([]byte(raw), &conf); err != nil {
		t.Fatalf("the conflist is not JSON: %v\n%s", err, raw)
	}
	return &conf, raw
}

const flannelLease = "/run/flannel/subnet.env"

// The conflist follows flanneld's lease: none without a lease (a stale one
// removed), the bridge plugin over the lease's subnet (its network
// address: flanneld writes the gateway's), gateway and default route on
// the node, the lease's MTU, routes to the flannel network, and no
// masquerade while flanneld masquerades; the same lease again writes
// nothing; a new lease rewrites it whole; nothing but the conflist is left
// in the CNI folder.
func TestFlannelConflistFollowsTheLease(t *testing.T) {
	n := newFlannelNode(t)
	n.write(t, conflistPath, "stale")
	if out := n.run(t, true); !strings.Contains(out, "no lease") {
		t.Errorf("no lease: %s", out)
	}
	if conf, _ := n.conflist(t); conf != nil {
		t.Fatal("a conflist is left without a lease")
	}
	n.write(t, flannelLease, "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n")
	n.run(t, true)
	conf, first := n.conflist(t)
	if conf == nil || conf.CNIVersion != "1.0.0" || conf.Name != "exk8s" || len(conf.Plugins) != 3 ||
		conf.Plugins[1].Type != "portmap" || conf.Plugins[2].Type != "firewall" {
		t.Fatalf("conflist %+v", conf)
	}
	br := conf.Plugins[0]
	if br.Type != "bridge" || br.Bridge != "cni0" || !br.IsGateway || !br.IsDefaultGateway || br.IPMasq || !br.HairpinMode ||
		br.MTU != 1450 || br.IPAM.Type != "host-local" || len(br.IPAM.Ranges) != 1 || len(br.IPAM.Ranges[0]) != 1 ||
		br.IPAM.Ranges[0][0].Subnet != "172.16.3.0/24" || len(br.IPAM.Routes) != 1 || br.IPAM.Routes[0].Dst != "172.16.0.0/12" {
		t.Errorf("bridge plugin %+v", br)
	}
	if out := n.run(t, true); !strings.Contains(out, "already holds the lease") {
		t.Errorf("the same lease again: %s", out)
	}
	n.write(t, flannelLease, "FLANNEL_NETWORK=10.0.0.0/8\nFLANNEL_SUBNET=10.9.8.129/25\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=false\n")
	n.run(t, true)
	conf, second := n.conflist(t)
	if second == first || conf.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.9.8.128/25" || !conf.Plugins[0].IPMasq || conf.Plugins[0].MTU != 1500 {
		t.Errorf("a new lease: %s", second)
	}
	entries, err := os.ReadDir(filepath.Dir(filepath.Join(n.root, conflistPath)))
	if err != nil || len(entries) != 1 {
		t.Errorf("the CNI folder holds %v (%v), want the conflist alone", entries, err)
	}
}

// Following (the unit's main process), the script writes the conflist
// when a lease appears after it started and again when the lease changes,
// with nothing else starting it: a node whose flanneld writes its lease
// late (a replacement's) gets its pod network.
func TestFlannelConflistFollowerSeesALateLease(t *testing.T) {
	n := newFlannelNode(t)
	cmd := exec.Command("bash", n.script, "--follow")
	cmd.Env = append(os.Environ(), "EXK8S_ROOT="+n.root, "EXK8S_FLANNEL_CNI_EVERY=0.05")
	var log strings.Builder
	cmd.Stderr = &log
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the follower's log:\n%s", log.String())
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Written in place, not renamed as flanneld does: the follower may
	// read it half-written, and must try again rather than stop.
	n.write(t, flannelLease, "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n")
	n.waitConflist(t, "172.16.3.0/24")
	n.write(t, flannelLease, "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.9.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n")
	n.waitConflist(t, "172.16.9.0/24")
	if cmd.ProcessState != nil {
		t.Errorf("the follower exited: %v", cmd.ProcessState)
	}
}

// waitConflist waits (up to 30 s, a deadline for a hung follower, not a
// speed target) for the conflist to name subnet.
func (n flannelNode) waitConflist(t *testing.T, subnet string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(n.raw(), `"`+subnet+`"`) {
			return
		}
	}
	t.Fatalf("the follower never wrote a conflist for %s; it holds %q", subnet, n.raw())
}

// A lease the script cannot read fails the run and leaves the conflist
// as it was; a lease is data, never run.
func TestFlannelConflistRefusesABadLease(t *testing.T) {
	for name, lease := range map[string]string{
		"no subnet":        "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
		"IPv6 subnet":      "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=fd00::1/64\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
		"prefix past 32":   "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.3.1/33\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
		"MTU not a number": "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.3.1/24\nFLANNEL_MTU=$(touch ran)\nFLANNEL_IPMASQ=true\n",
		"no masquerade":    "FLANNEL_NETWORK=172.16.0.0/12\nFLANNEL_SUBNET=172.16.3.1/24\nFLANNEL_MTU=1450\n",
	} {
		n := newFlannelNode(t)
		n.write(t, conflistPath, "kept")
		n.write(t, flannelLease, lease)
		if out := n.run(t, false); !strings.Contains(out, "FATAL") {
			t.Errorf("%s: %s", name, out)
		}
		if raw := n.raw(); raw != "kept" {
			t.Errorf("%s: the conflist became %q", name, raw)
		}
		if _, err := os.Stat(filepath.Join(n.root, "ran")); err == nil {
			t.Errorf("%s: the lease was run", name)
		}
	}
}

// flannel.yaml's objects decode strictly: the ServiceAccount, a ClusterRole
// that may read Nodes and patch their status and nothing else, its
// binding, net-conf.json over the pod CIDR with the host-gw backend, and
// a host-network DaemonSet of flanneld on every node whatever its taints,
// with NET_ADMIN and NET_RAW only, its Node's name and address, and the
// API server by the control plane's name.
func TestFlannelManifest(t *testing.T) {
	c, nodes := flannelCluster()
	_, bundles := realBundlesOf(t, c, nodes)
	docs := strings.Split(mustFile(t, bundles[101], addonDir+"/flannel.yaml"), "\n---\n")
	if len(docs) != 5 {
		t.Fatalf("flannel.yaml has %d documents, want 5", len(docs))
	}
	var (
		sa   corev1.ServiceAccount
		role rbacv1.ClusterRole
		crb  rbacv1.ClusterRoleBinding
		cm   corev1.ConfigMap
		ds   appsv1.DaemonSet
	)
	for i, into := range []any{&sa, &role, &crb, &cm, &ds} {
		strictYAML(t, "flannel.yaml", docs[i], into)
	}
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
	}
	if !slices.EqualFunc(role.Rules, wantRules, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) &&
			len(a.ResourceNames) == 0 && len(a.NonResourceURLs) == 0
	}) || crb.RoleRef.Name != role.Name || len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.Name || crb.Subjects[0].Namespace != "kube-system" {
		t.Errorf("RBAC: %+v bound by %+v", role.Rules, crb)
	}
	var netConf struct {
		Network string
		Backend struct{ Type string }
	}
	if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &netConf); err != nil || netConf.Network != c.PodCIDR || netConf.Backend.Type != "host-gw" {
		t.Errorf("net-conf.json %q: %+v, %v", cm.Data["net-conf.json"], netConf, err)
	}
	checkFlannelPod(t, ds.Spec.Template.Spec, sa.Name, cm.Name)
}

func checkFlannelPod(t *testing.T, pod corev1.PodSpec, sa, cm string) {
	t.Helper()
	if !pod.HostNetwork || pod.ServiceAccountName != sa || len(pod.Tolerations) != 1 || pod.Tolerations[0].Operator != corev1.TolerationOpExists ||
		pod.Tolerations[0].Key != "" || pod.Tolerations[0].Effect != "" || len(pod.Containers) != 1 {
		t.Fatalf("flannel's pod: %+v", pod)
	}
	ctr := pod.Containers[0]
	if ctr.Image != "ghcr.io/flannel-io/flannel:v0.28.10" || !slices.Equal(ctr.Command, []string{"/opt/bin/flanneld", "--kube-subnet-mgr", "--ip-masq",
		"--iface=$(NODE_IP)", "--net-config-path=/etc/flannel/net-conf.json"}) {
		t.Errorf("flanneld: %s %v", ctr.Image, ctr.Command)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	want := map[string]string{"NODE_NAME": "spec.nodeName", "NODE_IP": "status.hostIP",
		"KUBERNETES_SERVICE_HOST": "exk8s-7-2a.k8s.excloud.co.in", "KUBERNETES_SERVICE_PORT": "6443"}
	if !maps.Equal(env, want) {
		t.Errorf("flanneld's environment %v, want %v", env, want)
	}
	sc := ctr.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) {
		t.Errorf("flanneld's security context %+v", sc)
	}
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	if mounts["/run/flannel"] == "" || mounts["/etc/flannel"] == "" || len(pod.Volumes) != 3 || pod.Volumes[1].ConfigMap == nil || pod.Volumes[1].ConfigMap.Name != cm ||
		pod.Volumes[0].HostPath == nil || pod.Volumes[0].HostPath.Path != "/run/flannel" {
		t.Errorf("flanneld's mounts %v, volumes %+v", mounts, pod.Volumes)
	}
}

// Upstream's registry (the default): every image from where upstream
// publishes it, flannel's at ghcr.io. A mirror: every image from it, under
// the same repository names. Only a flannel cluster runs (and pulls ahead)
// flannel's image, after kube-proxy's and before CoreDNS's.
func TestImagesComeFromTheirHomeOrTheMirror(t *testing.T) {
	a := artifacts.Default()
	for _, tc := range []struct{ registry, flannel, apiserver string }{
		{artifacts.UpstreamImageRegistry, "ghcr.io/flannel-io/flannel:v0.28.10", "registry.k8s.io/kube-apiserver:v1.35.4"},
		{"198.51.100.1:5000", "198.51.100.1:5000/flannel-io/flannel:v0.28.10", "198.51.100.1:5000/kube-apiserver:v1.35.4"},
	} {
		a.ImageRegistry = tc.registry
		v := newImagesView(a, "v1.35.4", "flannel")
		if v.Flannel != tc.flannel || v.APIServer != tc.apiserver || len(v.Ahead) != 7 || v.Ahead[5] != tc.flannel || v.Ahead[4] != v.KubeProxy || v.Ahead[6] != v.CoreDNS {
			t.Errorf("%s: %+v", tc.registry, v)
		}
		if other := newImagesView(a, "v1.35.4", "bridge"); other.Flannel != "" || slices.Contains(other.Ahead, tc.flannel) || len(other.Ahead) != 6 {
			t.Errorf("%s, bridge: %+v", tc.registry, other)
		}
	}
}
