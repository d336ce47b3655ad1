package bundle

import (
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// topology is what a bundle knows about the control plane, derived once.
type topology struct {
	peers     []clusterfacts.Node // sorted by ordinal
	self      clusterfacts.Node
	isInitial bool // self has the lowest ordinal
}

func newTopology(nodes []clusterfacts.Node, selfVMID int64) (topology, error) {
	peers := append([]clusterfacts.Node(nil), nodes...)
	sort.Slice(peers, func(i, j int) bool { return peers[i].Ordinal < peers[j].Ordinal })
	for _, n := range peers {
		if n.VMID == selfVMID {
			return topology{peers: peers, self: n, isInitial: peers[0].VMID == selfVMID}, nil
		}
	}
	return topology{}, fmt.Errorf("VM %d is not a control-plane node of this cluster", selfVMID)
}

// etcdInitialCluster is etcd's --initial-cluster: name=https://ip:2380 per
// peer. A joining node's lists the members it joins (itself included,
// the nodes being replaced not), as etcd checks them against the running
// cluster's; a founding node's lists every peer.
func (t topology) etcdInitialCluster() string {
	members := t.peers
	if t.self.Joins {
		members = t.etcdMembers()
	}
	parts := make([]string, len(members))
	for i, n := range members {
		parts[i] = n.Name + "=" + peerURL(n)
	}
	return strings.Join(parts, ",")
}

// peerURL is node n's etcd peer URL.
func peerURL(n clusterfacts.Node) string { return "https://" + net.JoinHostPort(n.IPv4, "2380") }

// etcdMembers is the peers that stay etcd members: not being replaced.
func (t topology) etcdMembers() []clusterfacts.Node {
	var out []clusterfacts.Node
	for _, n := range t.peers {
		if !n.Retiring {
			out = append(out, n)
		}
	}
	return out
}

// localEtcd is the apiserver's --etcd-servers: its own node's member
// alone, on loopback (etcd listens there, and its serving certificate
// names 127.0.0.1), as kubeadm's stacked etcd does. The flag never names
// another node, so it never changes as members come and go (a
// replacement, a scaling, an upgrade): every API server follows the
// membership through its own member, and one whose member is down is
// down with it (its node is not ready, and the DNS name's other records
// serve).
const localEtcd = "https://127.0.0.1:2379"

// podNetwork is what the bridge CNI renders on one node: its own pod subnet
// (its conflist) and a route to every peer's (exk8s-pod-network.sh).
type podNetwork struct {
	PodCIDR    string // the cluster's: traffic leaving it is masqueraded
	NodeSubnet string // this node's, by clusterfacts.NodePodCIDR
	Routes     []podRoute
}

// podRoute sends a peer's pod subnet to that peer's private address.
type podRoute struct {
	Node, Subnet, Via string
}

// podNetwork carves the pod CIDR for every peer, by ordinal.
func (t topology) podNetwork(podCIDR string) (*podNetwork, error) {
	self, err := clusterfacts.NodePodCIDR(podCIDR, t.self.Ordinal)
	if err != nil {
		return nil, err
	}
	pn := &podNetwork{PodCIDR: podCIDR, NodeSubnet: self}
	for _, p := range t.peers {
		if p.VMID == t.self.VMID {
			continue
		}
		subnet, err := clusterfacts.NodePodCIDR(podCIDR, p.Ordinal)
		if err != nil {
			return nil, err
		}
		pn.Routes = append(pn.Routes, podRoute{Node: p.Name, Subnet: subnet, Via: p.IPv4})
	}
	return pn, nil
}
