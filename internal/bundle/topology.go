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
