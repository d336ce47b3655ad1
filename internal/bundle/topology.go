package bundle

import (
	"fmt"
	"math/big"
	"net"
	"sort"
	"strings"
)

// ServiceIPs returns the first address of the service CIDR (the kubernetes
// Service, which the apiserver serving cert must name) and its tenth (the
// cluster DNS Service).
func ServiceIPs(serviceCIDR string) (serviceIP, dnsServiceIP net.IP, err error) {
	_, ipnet, err := net.ParseCIDR(serviceCIDR)
	if err != nil {
		return nil, nil, fmt.Errorf("must be a CIDR, got %q", serviceCIDR)
	}
	ones, bits := ipnet.Mask.Size()
	if bits-ones < 4 { // fewer than 16 addresses: no room for .10
		return nil, nil, fmt.Errorf("%s is too small: it needs at least 16 addresses", serviceCIDR)
	}
	return addToIP(ipnet.IP, 1), addToIP(ipnet.IP, 10), nil
}

func addToIP(ip net.IP, n int64) net.IP {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	sum := new(big.Int).Add(new(big.Int).SetBytes(ip), big.NewInt(n))
	out := make(net.IP, len(ip))
	sum.FillBytes(out)
	return out
}

// NodePodPrefix is the prefix length of each node's pod subnet under the
// bridge CNI: 256 addresses, room for the kubelet's default of 110 pods
// (kubenet's, and the controller manager's default node CIDR size).
const NodePodPrefix = 24

// NodePodCIDR is the pod subnet of the node with that ordinal under the
// bridge CNI: the one rule the node's own conflist and every peer's route to
// it are rendered from. The cluster's IPv4 pod CIDR is cut into /24s in
// address order and ordinal k takes subnet k-1, so the carve depends on the
// node list alone (never on which node registers first). It fails when the
// pod CIDR is not IPv4, is smaller than a /24, or holds fewer than k of them.
func NodePodCIDR(podCIDR string, ordinal int) (string, error) {
	_, ipnet, err := net.ParseCIDR(podCIDR)
	if err != nil || ipnet.IP.To4() == nil {
		return "", fmt.Errorf("must be an IPv4 CIDR for the bridge CNI, got %q", podCIDR)
	}
	ones, _ := ipnet.Mask.Size()
	if ones > NodePodPrefix {
		return "", fmt.Errorf("%s is too small: the bridge CNI gives every node a /%d of it", podCIDR, NodePodPrefix)
	}
	if subnets := 1 << (NodePodPrefix - ones); ordinal < 1 || ordinal > subnets {
		return "", fmt.Errorf("%s holds %d node pod subnets (/%d), none for ordinal %d", podCIDR, subnets, NodePodPrefix, ordinal)
	}
	first := addToIP(ipnet.IP, int64(ordinal-1)<<(32-NodePodPrefix))
	return fmt.Sprintf("%s/%d", first, NodePodPrefix), nil
}

// topology is what a bundle knows about the control plane, derived once.
type topology struct {
	peers     []Node // sorted by ordinal
	self      Node
	isInitial bool // self has the lowest ordinal
}

func newTopology(nodes []Node, selfVMID int64) (topology, error) {
	peers := append([]Node(nil), nodes...)
	sort.Slice(peers, func(i, j int) bool { return peers[i].Ordinal < peers[j].Ordinal })
	for _, n := range peers {
		if n.VMID == selfVMID {
			return topology{peers: peers, self: n, isInitial: peers[0].VMID == selfVMID}, nil
		}
	}
	return topology{}, fmt.Errorf("VM %d is not a control-plane node of this cluster", selfVMID)
}

// etcdInitialCluster is etcd's --initial-cluster: name=https://ip:2380 per peer.
func (t topology) etcdInitialCluster() string {
	parts := make([]string, len(t.peers))
	for i, n := range t.peers {
		parts[i] = fmt.Sprintf("%s=https://%s", n.Name, net.JoinHostPort(n.IPv4, "2380"))
	}
	return strings.Join(parts, ",")
}

// etcdServers is the apiserver's --etcd-servers: every member's client URL.
func (t topology) etcdServers() string {
	parts := make([]string, len(t.peers))
	for i, n := range t.peers {
		parts[i] = "https://" + net.JoinHostPort(n.IPv4, "2379")
	}
	return strings.Join(parts, ",")
}

// podNetwork is what the bridge CNI renders on one node: its own pod subnet
// (its conflist) and a route to every peer's (exk8s-pod-network.sh).
type podNetwork struct {
	PodCIDR    string // the cluster's: traffic leaving it is masqueraded
	NodeSubnet string // this node's, by NodePodCIDR
	Routes     []podRoute
}

// podRoute sends a peer's pod subnet to that peer's private address.
type podRoute struct {
	Node, Subnet, Via string
}

// podNetwork carves the pod CIDR for every peer, by ordinal.
func (t topology) podNetwork(podCIDR string) (*podNetwork, error) {
	self, err := NodePodCIDR(podCIDR, t.self.Ordinal)
	if err != nil {
		return nil, err
	}
	pn := &podNetwork{PodCIDR: podCIDR, NodeSubnet: self}
	for _, p := range t.peers {
		if p.VMID == t.self.VMID {
			continue
		}
		subnet, err := NodePodCIDR(podCIDR, p.Ordinal)
		if err != nil {
			return nil, err
		}
		pn.Routes = append(pn.Routes, podRoute{Node: p.Name, Subnet: subnet, Via: p.IPv4})
	}
	return pn, nil
}
