package bundle

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// The bundle refuses a bridge cluster whose pod CIDR cannot give every node
// its /24, with the field and the reason; Cilium carves its own pool, so
// the same CIDR renders under it.
func TestBridgeNeedsAPodSubnetForEveryNode(t *testing.T) {
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	for _, tc := range []struct{ podCIDR, want string }{
		{"172.16.0.0/23", "cluster.pod_cidr: 172.16.0.0/23 holds 2 node pod subnets (/24), none for ordinal 3"},
		{"172.16.0.0/25", "cluster.pod_cidr: 172.16.0.0/25 is too small: the bridge CNI gives every node a /24 of it"},
		{"fd00:10::/48", `cluster.pod_cidr: must be an IPv4 CIDR for the bridge CNI, got "fd00:10::/48"`},
	} {
		c, nodes := bridgeCluster()
		c.PodCIDR = tc.podCIDR
		if _, err := r.Render(fx.input(c, nodes, 102)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.podCIDR, err, tc.want)
		}
		c.CNI = clusterfacts.CNICilium
		if _, err := r.Render(fx.input(c, nodes, 102)); err != nil && !strings.Contains(tc.podCIDR, ":") {
			t.Errorf("%s under Cilium: %v", tc.podCIDR, err)
		}
	}
}

// The bundle refuses a flannel cluster whose pod CIDR the controller
// manager cannot allocate node subnets from, with the field and the reason.
func TestFlannelNeedsAnAllocatablePodCIDR(t *testing.T) {
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	for _, tc := range []struct{ podCIDR, want string }{
		{"172.16.0.0/25", "cluster.pod_cidr: 172.16.0.0/25 is too small: the controller manager gives every node a /24 of it"},
		{"10.0.0.0/7", "cluster.pod_cidr: 10.0.0.0/7 is too large: the controller manager cuts at most 2^16 node subnets (/24) from it"},
		{"fd00:10::/48", `cluster.pod_cidr: must be an IPv4 CIDR for the flannel CNI, got "fd00:10::/48"`},
	} {
		c, nodes := flannelCluster()
		c.PodCIDR = tc.podCIDR
		if _, err := r.Render(fx.input(c, nodes, 102)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.podCIDR, err, tc.want)
		}
	}
}

// conflist is what the tests read of 10-exk8s.conflist, whichever CNI
// wrote it (the bundle, or flannel's script on the node).
type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []struct {
		Type             string `json:"type"`
		Bridge           string `json:"bridge"`
		IsGateway        bool   `json:"isGateway"`
		IsDefaultGateway bool   `json:"isDefaultGateway"`
		IPMasq           bool   `json:"ipMasq"`
		HairpinMode      bool   `json:"hairpinMode"`
		MTU              int    `json:"mtu"`
		IPAM             struct {
			Type   string `json:"type"`
			Ranges [][]struct {
				Subnet string `json:"subnet"`
			} `json:"ranges"`
			Routes []struct {
				Dst string `json:"dst"`
			} `json:"routes"`
		} `json:"ipam"`
	} `json:"plugins"`
}

func readConflist(t *testing.T, b *Bundle) conflist {
	t.Helper()
	var conf conflist
	if err := json.Unmarshal([]byte(mustFile(t, b, "/etc/cni/net.d/10-exk8s.conflist")), &conf); err != nil {
		t.Fatalf("%s: conflist is not JSON: %v", b.Metadata.NodeName, err)
	}
	if conf.CNIVersion != "1.0.0" || len(conf.Plugins) != 3 || conf.Plugins[0].Type != "bridge" || conf.Plugins[0].Bridge != "cni0" ||
		!conf.Plugins[0].IsGateway || conf.Plugins[0].IPAM.Type != "host-local" || conf.Plugins[1].Type != "portmap" || conf.Plugins[2].Type != "firewall" {
		t.Errorf("%s: conflist %+v", b.Metadata.NodeName, conf)
	}
	return conf
}

// Under Cilium every node's conflist spans the pod CIDR (until Cilium takes
// over); under the bridge CNI each node hands out its own /24, by ordinal,
// disjoint from its peers' and inside the pod CIDR, without masquerading.
func TestConflists(t *testing.T) {
	_, cilium := realBundles(t)
	for _, b := range cilium {
		if conf := readConflist(t, b); conf.Plugins[0].IPAM.Ranges[0][0].Subnet != "172.16.0.0/12" || !conf.Plugins[0].IPMasq {
			t.Errorf("cilium %s: %+v", b.Metadata.NodeName, conf)
		}
	}
	c, nodes := bridgeCluster()
	_, bridge := realBundlesOf(t, c, nodes)
	_, podNet, _ := net.ParseCIDR(c.PodCIDR)
	seen := map[string]bool{}
	for _, b := range bridge {
		conf := readConflist(t, b)
		subnet := conf.Plugins[0].IPAM.Ranges[0][0].Subnet
		want, err := clusterfacts.NodePodCIDR(c.PodCIDR, selfNode(t, b).Ordinal)
		if err != nil || subnet != want || conf.Plugins[0].IPMasq || seen[subnet] || !podNet.Contains(net.ParseIP(strings.TrimSuffix(subnet, "/24"))) {
			t.Errorf("bridge %s: subnet %s (want %s, %v), ipMasq %v", b.Metadata.NodeName, subnet, want, err, conf.Plugins[0].IPMasq)
		}
		seen[subnet] = true
	}
}

// A bundle carries only what its CNI uses: helm, the chart and its values
// under Cilium only; the bridge CNI's pod-network unit and script under it
// only; under flannel no conflist but the unit and script that
// write it, and flannel's manifest. The kubelet wants the CNI's network
// unit; the controller manager allocates node CIDRs (/24s) under flannel
// only; kube-proxy's cluster CIDR is the pod CIDR under every CNI.
func TestEachCNIBundleCarriesOnlyWhatItUses(t *testing.T) {
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	const flannelUnits = unitDir + "/exk8s-flannel-cni"
	for _, tc := range []struct {
		cni                   clusterfacts.CNI
		unit                  string // the kubelet's wanted network unit
		files, absent         []string
		allocate, cidrMaskLen string
	}{
		{clusterfacts.CNICilium, "", []string{configDir + "/cilium-values.yaml", conflistPath},
			[]string{unitDir + "/exk8s-pod-network.service", flannelUnits + ".service", addonDir + "/flannel.yaml"}, "false", ""},
		{clusterfacts.CNIBridge, "exk8s-pod-network.service", []string{unitDir + "/exk8s-pod-network.service", binDir + "/exk8s-pod-network.sh", conflistPath},
			[]string{configDir + "/cilium-values.yaml", flannelUnits + ".service", addonDir + "/flannel.yaml"}, "false", ""},
		{clusterfacts.CNIFlannel, "exk8s-flannel-cni.service",
			[]string{flannelUnits + ".service", binDir + "/exk8s-flannel-cni.sh", addonDir + "/flannel.yaml"},
			[]string{configDir + "/cilium-values.yaml", conflistPath, unitDir + "/exk8s-pod-network.service"}, "true", "24"},
	} {
		c, nodes := testCluster()
		c.CNI = tc.cni
		b, err := r.Render(fx.input(c, nodes, 101))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tc.files {
			mustFile(t, b, p)
		}
		for _, p := range tc.absent {
			if _, ok := b.File(p); ok {
				t.Errorf("%s: the bundle carries %s", tc.cni, p)
			}
		}
		cilium := tc.cni == clusterfacts.CNICilium
		env := mustFile(t, b, "/etc/exk8s/config/cluster.env")
		if strings.Contains(env, "HELM_") != cilium || strings.Contains(env, "CILIUM_") != cilium || !strings.Contains(env, "\nCNI='"+string(tc.cni)+"'\n") {
			t.Errorf("%s: cluster.env:\n%s", tc.cni, env)
		}
		wants := "Wants=network-online.target\n"
		if tc.unit != "" {
			wants = "Wants=network-online.target " + tc.unit + "\n"
		}
		if kubelet := mustFile(t, b, unitDir+"/kubelet.service"); !strings.Contains(kubelet, wants) ||
			!strings.Contains(kubelet, "exk8s-imds-guard.service"+strings.TrimPrefix(wants, "Wants=network-online.target")) {
			t.Errorf("%s: kubelet.service does not want and follow %q:\n%s", tc.cni, tc.unit, kubelet)
		}
		cm := flags(mustFile(t, b, staticPodDir+"/kube-controller-manager.yaml"))
		proxy := flags(mustFile(t, b, addonDir+"/kube-proxy.yaml"))
		if cm["allocate-node-cidrs"] != tc.allocate || cm["node-cidr-mask-size"] != tc.cidrMaskLen || cm["cluster-cidr"] != c.PodCIDR || proxy["cluster-cidr"] != c.PodCIDR {
			t.Errorf("%s: controller manager %v, kube-proxy %v", tc.cni, cm, proxy)
		}
	}
}

// The IMDS guard drops by source address from the cluster's whole pod
// CIDR, on every interface: every bridge node's pod subnet (its pods on
// cni0) lies inside the CIDR the guard reads from cluster.env.
func TestIMDSGuardCoversBridgePods(t *testing.T) {
	c, nodes := bridgeCluster()
	_, bundles := realBundlesOf(t, c, nodes)
	for _, b := range bundles {
		guard := mustFile(t, b, "/usr/local/bin/exk8s-imds-guard.sh")
		if !strings.Contains(guard, "ip saddr ${POD_CIDR} ip daddr { ${addresses} } counter drop") || strings.Contains(guard, "iif") {
			t.Errorf("%s: the guard's rule is not a drop from the whole pod CIDR on every interface", b.Metadata.NodeName)
		}
		if !strings.Contains(mustFile(t, b, "/etc/exk8s/config/cluster.env"), "\nPOD_CIDR='"+c.PodCIDR+"'\n") {
			t.Errorf("%s: cluster.env does not give the guard the pod CIDR", b.Metadata.NodeName)
		}
		_, podNet, _ := net.ParseCIDR(c.PodCIDR)
		_, nodeNet, err := net.ParseCIDR(readConflist(t, b).Plugins[0].IPAM.Ranges[0][0].Subnet)
		if ones, _ := nodeNet.Mask.Size(); err != nil || !podNet.Contains(nodeNet.IP) || ones < 12 {
			t.Errorf("%s: pods on cni0 (%v) outside the guarded %s", b.Metadata.NodeName, nodeNet, c.PodCIDR)
		}
	}
}

// fakeNetTools are an ip and an iptables that log their arguments to
// $FAKE_LOG; the fake iptables keeps the rules it was asked to append in
// $FAKE_RULES and answers -C from them, as the real one does.
var fakeNetTools = map[string]string{
	"ip": `#!/usr/bin/env bash
echo "ip $*" >>"$FAKE_LOG"
`,
	"iptables": `#!/usr/bin/env bash
echo "iptables $*" >>"$FAKE_LOG"
rule="$*"
case " $rule " in
  *" -C "*) grep -qxF -- "${rule/ -C / -A }" "$FAKE_RULES" 2>/dev/null ;;
  *" -A "*) echo "$rule" >>"$FAKE_RULES" ;;
esac
`,
}

// runPodNetwork runs a node's exk8s-pod-network.sh with the fakes first on
// PATH and EXK8S_ROOT at dir/root (where the shell library is), and returns
// what the fakes were asked, by this run only.
func runPodNetwork(t *testing.T, dir, script string) []string {
	t.Helper()
	log := filepath.Join(dir, "calls")
	_ = os.Remove(log)
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "EXK8S_ROOT="+filepath.Join(dir, "root"),
		"FAKE_LOG="+log, "FAKE_RULES="+filepath.Join(dir, "rules"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(calls), "\n"), "\n")
}

// Node 2's script routes each peer's pod subnet to that peer and
// masquerades its own pods' traffic leaving the pod CIDR; run again (a
// reboot, a restart of the unit) it replaces the same routes and adds no
// second rule. A single node routes nothing.
func TestPodNetworkScript(t *testing.T) {
	requireTools(t, "bash", "grep")
	fx := loadFixtures(t)
	r := newTestRenderer(t)
	const masq = "-s 172.16.1.0/24 ! -d 172.16.0.0/12 -m comment --comment exk8s: pod traffic leaving the pod CIDR -j MASQUERADE"
	routes := []string{"ip route replace 172.16.0.0/24 via 10.0.0.11", "ip route replace 172.16.2.0/24 via 10.0.0.13"}
	check, add := "iptables -w -t nat -C POSTROUTING "+masq, "iptables -w -t nat -A POSTROUTING "+masq
	c, nodes := bridgeCluster()
	for _, tc := range []struct {
		name  string
		nodes []clusterfacts.Node
		runs  [][]string
	}{
		{"three nodes", nodes, [][]string{append(routes, check, add), append(routes, check)}},
		{"one node", []clusterfacts.Node{{VMID: 102, Ordinal: 2, Name: "cp-2.cluster-42.internal", IPv4: "10.0.0.12"}}, [][]string{{check, add}, {check}}},
	} {
		b, err := r.Render(fx.input(c, tc.nodes, 102))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for name, body := range fakeNetTools {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		script := filepath.Join(dir, "exk8s-pod-network.sh")
		if err := os.WriteFile(script, []byte(mustFile(t, b, "/usr/local/bin/exk8s-pod-network.sh")), 0o755); err != nil {
			t.Fatal(err)
		}
		// The script sources the shell library from EXK8S_ROOT.
		lib := filepath.Join(dir, "root/usr/local/bin/exk8s-progress.sh")
		if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lib, []byte(mustFile(t, b, "/usr/local/bin/exk8s-progress.sh")), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, want := range tc.runs {
			if got := runPodNetwork(t, dir, script); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, run %d:\n got %q\nwant %q", tc.name, i+1, got, want)
			}
		}
		if rules, _ := os.ReadFile(filepath.Join(dir, "rules")); string(rules) != "-w -t nat -A POSTROUTING "+masq+"\n" {
			t.Errorf("%s: NAT rules after two runs:\n%s", tc.name, rules)
		}
	}
}
