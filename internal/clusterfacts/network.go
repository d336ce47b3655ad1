package clusterfacts

import (
	"fmt"
	"math/big"
	"net"
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

// MaxNodeSubnetBits is how many bits of node subnets the controller
// manager's node CIDR allocator cuts a pod CIDR into at most (its
// cidrset refuses more than 2^16 subnets).
const MaxNodeSubnetBits = 16

// CheckAllocatedPodCIDR is the flannel CNI's rule for the pod CIDR: the
// controller manager allocates every Node a /NodePodPrefix of it
// (--node-cidr-mask-size), in the order Nodes register, and flanneld
// routes them. It must be IPv4 (the cluster's net-conf.json names an IPv4
// network), hold at least one node subnet and at most 2^16.
func CheckAllocatedPodCIDR(podCIDR string) error {
	_, ipnet, err := net.ParseCIDR(podCIDR)
	if err != nil || ipnet.IP.To4() == nil {
		return fmt.Errorf("must be an IPv4 CIDR for the flannel CNI, got %q", podCIDR)
	}
	switch ones, _ := ipnet.Mask.Size(); {
	case ones > NodePodPrefix:
		return fmt.Errorf("%s is too small: the controller manager gives every node a /%d of it", podCIDR, NodePodPrefix)
	case NodePodPrefix-ones > MaxNodeSubnetBits:
		return fmt.Errorf("%s is too large: the controller manager cuts at most 2^%d node subnets (/%d) from it", podCIDR, MaxNodeSubnetBits, NodePodPrefix)
	}
	return nil
}
