package simulator

import (
	"net/netip"
	"testing"
)

func TestNextFree(t *testing.T) {
	a := netip.MustParseAddr
	cases := []struct {
		cidr string
		used []string
		want string // "" for an error
	}{
		{"10.0.1.0/24", nil, "10.0.1.2"},                                                          // skips network and gateway
		{"10.0.1.77/24", nil, "10.0.1.2"},                                                         // host bits ignored
		{"10.0.1.0/24", []string{"10.0.1.2", "10.0.1.4"}, "10.0.1.3"},                             // first gap
		{"10.0.1.0/30", nil, "10.0.1.2"},                                                          // the one host of a /30 (.3 is broadcast)
		{"10.0.1.0/29", []string{"10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5", "10.0.1.6"}, ""}, // .7 is broadcast
		{"10.0.1.0/31", nil, ""},
		{"fd00::/64", []string{"fd00::2"}, "fd00::3"},
		{"not a cidr", nil, ""},
	}
	for _, tc := range cases {
		used := map[netip.Addr]bool{}
		for _, u := range tc.used {
			used[a(u)] = true
		}
		got, err := nextFree(tc.cidr, used)
		if tc.want == "" {
			if err == nil {
				t.Errorf("nextFree(%s, %v) = %s, want an error", tc.cidr, tc.used, got)
			}
			continue
		}
		if err != nil || got != a(tc.want) {
			t.Errorf("nextFree(%s, %v) = %v, %v; want %s", tc.cidr, tc.used, got, err, tc.want)
		}
	}
}

func TestNextFreeExhaustsA24At253(t *testing.T) {
	used := map[netip.Addr]bool{}
	for i := 0; i < 253; i++ {
		got, err := nextFree("10.9.0.0/24", used)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if used[got] {
			t.Fatalf("allocation %d reused %s", i, got)
		}
		used[got] = true
	}
	if got, err := nextFree("10.9.0.0/24", used); err == nil {
		t.Fatalf("254th allocation = %s, want exhaustion", got)
	}
}
