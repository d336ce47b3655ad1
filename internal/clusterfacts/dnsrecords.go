package clusterfacts

import (
	"cmp"
	"slices"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// DNSRecordTTL is the TTL of the control-plane name's A records, those
// founding creates and those it and every bundle suggest alike. 300 s: the
// addresses behind the name change only when a control-plane VM is
// replaced, which is rare and deliberate, and a client that meets a stale
// address moves on to the name's other records; a shorter TTL would make
// every kubelet and kubectl lean on its resolver five times as often for
// nothing. It is also what bundles have always suggested.
const DNSRecordTTL = 300

// ControlPlaneRecords is the one rule for the shared control-plane name:
// one A record per node, in ordinal order, holding the nodes' public
// addresses when any node has one, else their private ones. Never a mix:
// a client outside the subnet cannot reach a private address and a client
// inside may not route to a public one, so a mixed answer would send some
// clients to an address they cannot reach.
func ControlPlaneRecords(name string, nodes []Node) []apitypes.DNSRecord {
	peers := slices.SortedFunc(slices.Values(nodes), func(a, b Node) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	public := slices.ContainsFunc(peers, func(n Node) bool { return n.PublicIPv4 != "" })
	records := []apitypes.DNSRecord{}
	for _, n := range peers {
		addr := n.IPv4
		if public {
			addr = n.PublicIPv4
		}
		if addr != "" {
			records = append(records, apitypes.DNSRecord{Type: "A", Name: name, Value: addr, TTL: DNSRecordTTL})
		}
	}
	return records
}
