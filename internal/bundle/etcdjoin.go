package bundle

import (
	"net"
	"strings"
)

// EtcdJoinScript joins a replacement node's etcd member to the running
// cluster (docs/REPLACE-NODE.md).
const EtcdJoinScript = binDir + "/exk8s-etcd-join.sh"

// etcdJoinView is what a node made by a replacement needs to join etcd:
// the client URLs of the members that stay (itself excluded: its etcd is
// not running yet), its own peer URL, and the members it removes.
type etcdJoinView struct {
	Script    string
	Endpoints string
	PeerURL   string
	Removed   []string // name=peer URL of each member it removes
}

// newEtcdJoinView is nil for a node that founds etcd with its peers.
func newEtcdJoinView(t topology) *etcdJoinView {
	if !t.self.Joins {
		return nil
	}
	j := &etcdJoinView{Script: EtcdJoinScript, PeerURL: peerURL(t.self)}
	var endpoints []string
	for _, n := range t.peers {
		switch {
		case n.Retiring:
			j.Removed = append(j.Removed, n.Name+"="+peerURL(n))
		case n.VMID != t.self.VMID:
			endpoints = append(endpoints, "https://"+net.JoinHostPort(n.IPv4, "2379"))
		}
	}
	j.Endpoints = strings.Join(endpoints, ",")
	return j
}

// etcdJoinFiles is the join script of a joining node; none otherwise.
func etcdJoinFiles(v *view) []fileSpec {
	if v.EtcdJoin == nil {
		return nil
	}
	return []fileSpec{tmpl(EtcdJoinScript, "exk8s-etcd-join.sh", modeScript, v)}
}
