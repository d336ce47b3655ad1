package clusterfacts

import (
	"slices"
	"testing"
)

// The control-plane name never mixes public and private addresses: public
// when any node has one, else private; one record a node, in ordinal order.
func TestControlPlaneRecordsNeverMix(t *testing.T) {
	a := Node{Ordinal: 2, IPv4: "10.0.0.12", PublicIPv4: "203.0.113.12"}
	b := Node{Ordinal: 1, IPv4: "10.0.0.11", PublicIPv4: "203.0.113.11"}
	c := Node{Ordinal: 3, IPv4: "10.0.0.13"}
	privateOnly := func(n Node) Node { n.PublicIPv4 = ""; return n }
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string
	}{
		{"all public", []Node{a, b}, []string{"203.0.113.11", "203.0.113.12"}},
		{"some public: only the public ones", []Node{a, b, c}, []string{"203.0.113.11", "203.0.113.12"}},
		{"none public", []Node{privateOnly(a), privateOnly(b), c}, []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"}},
	} {
		var got []string
		for _, r := range ControlPlaneRecords("cp.example", tc.nodes) {
			if r.Type != "A" || r.Name != "cp.example" || r.TTL != DNSRecordTTL {
				t.Errorf("%s: record %+v", tc.name, r)
			}
			got = append(got, r.Value)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
