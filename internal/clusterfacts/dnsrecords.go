package clusterfacts

import (
	"cmp"
	"slices"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// DNSRecordTTL is the TTL of the control-plane name's A records that
// founding and every bundle suggest, and the default of the one k8sapi
// writes (CONTROL_PLANE_DNS_TTL_SECONDS, usecase.Settings.DNSTTL). 300 s: the
// address behind the name changes only when a control-plane VM is
// replaced or a CA rotation steers the name off a node about to restart
// (which waits the TTL out first, so a longer TTL makes a rotation longer,
// never less safe); a shorter TTL would make every kubelet and kubectl
// lean on its resolver five times as often for nothing. It is also what
// bundles have always suggested.
const DNSRecordTTL = 300

// ControlPlaneRecords is the one rule for the shared control-plane name:
// one A record per node, in ordinal order, holding the nodes' public
// addresses when any node has one, else their private ones. Never a mix:
// a client outside the subnet cannot reach a private address and a client
// inside may not route to a public one, so a mixed answer would send some
// clients to an address they cannot reach.
func ControlPlaneRecords(name string, nodes []Node) []apitypes.DNSRecord {
	peers := slices.SortedFunc(slices.Values(nodes), func(a, b Node) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	public := anyPublic(peers)
	records := []apitypes.DNSRecord{}
	for _, n := range peers {
		if addr := recordAddress(public, n); addr != "" {
			records = append(records, apitypes.DNSRecord{Type: "A", Name: name, Value: addr, TTL: DNSRecordTTL})
		}
	}
	return records
}

// EndpointRecord is the name's one record when it points at node n alone
// (the platform DNS API holds one value per name), by the same rule as
// ControlPlaneRecords among nodes, with ttl; false: n has no address of
// the kind the rule picks.
func EndpointRecord(name string, nodes []Node, n Node, ttl int) (apitypes.DNSRecord, bool) {
	addr := recordAddress(anyPublic(nodes), n)
	return apitypes.DNSRecord{Type: "A", Name: name, Value: addr, TTL: ttl}, addr != ""
}

func anyPublic(nodes []Node) bool {
	return slices.ContainsFunc(nodes, func(n Node) bool { return n.PublicIPv4 != "" })
}

// recordAddress is n's address in the name's records: its public one
// when the records are public, else its private one.
func recordAddress(public bool, n Node) string {
	if public {
		return n.PublicIPv4
	}
	return n.IPv4
}
