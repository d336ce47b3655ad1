package clusterfacts

import (
	"net"
	"testing"
)

func TestServiceIPs(t *testing.T) {
	for _, tc := range []struct{ cidr, svc, dns, err string }{
		{"10.96.0.0/12", "10.96.0.1", "10.96.0.10", ""},
		{"10.96.5.7/24", "10.96.5.1", "10.96.5.10", ""},
		{"fd00:10:96::/112", "fd00:10:96::1", "fd00:10:96::a", ""},
		{"10.0.0.0/29", "", "", "10.0.0.0/29 is too small: it needs at least 16 addresses"},
		{"nope", "", "", `must be a CIDR, got "nope"`},
	} {
		svc, dns, err := ServiceIPs(tc.cidr)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ServiceIPs(%q) error %v, want %q", tc.cidr, err, tc.err)
			}
			continue
		}
		if err != nil || !svc.Equal(net.ParseIP(tc.svc)) || !dns.Equal(net.ParseIP(tc.dns)) {
			t.Errorf("ServiceIPs(%q) = %v, %v, %v; want %s, %s", tc.cidr, svc, dns, err, tc.svc, tc.dns)
		}
	}
}

func TestNodePodCIDR(t *testing.T) {
	for _, tc := range []struct {
		podCIDR string
		ordinal int
		want    string
		err     string
	}{
		{"172.16.0.0/12", 1, "172.16.0.0/24", ""},
		{"172.16.0.0/12", 2, "172.16.1.0/24", ""},
		{"172.16.0.0/12", 3, "172.16.2.0/24", ""},
		{"172.16.0.0/12", 257, "172.17.0.0/24", ""},
		{"172.16.9.9/12", 1, "172.16.0.0/24", ""}, // the network, not the address written
		{"10.244.0.0/16", 256, "10.244.255.0/24", ""},
		{"10.244.0.0/24", 1, "10.244.0.0/24", ""},
		{"10.244.0.0/16", 257, "", "10.244.0.0/16 holds 256 node pod subnets (/24), none for ordinal 257"},
		{"172.16.0.0/23", 3, "", "172.16.0.0/23 holds 2 node pod subnets (/24), none for ordinal 3"},
		{"172.16.0.0/12", 0, "", "172.16.0.0/12 holds 4096 node pod subnets (/24), none for ordinal 0"},
		{"172.16.0.0/25", 1, "", "172.16.0.0/25 is too small: the bridge CNI gives every node a /24 of it"},
		{"fd00:10::/48", 1, "", `must be an IPv4 CIDR for the bridge CNI, got "fd00:10::/48"`},
		{"nope", 1, "", `must be an IPv4 CIDR for the bridge CNI, got "nope"`},
	} {
		got, err := NodePodCIDR(tc.podCIDR, tc.ordinal)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("NodePodCIDR(%q, %d) = %q, %v; want %q, %q", tc.podCIDR, tc.ordinal, got, err, tc.want, tc.err)
		}
	}
}

func TestCheckAllocatedPodCIDR(t *testing.T) {
	for _, tc := range []struct{ podCIDR, err string }{
		{"172.16.0.0/12", ""},
		{"10.0.0.0/8", ""},
		{"10.244.0.0/24", ""},
		{"10.0.0.0/7", "10.0.0.0/7 is too large: the controller manager cuts at most 2^16 node subnets (/24) from it"},
		{"172.16.0.0/25", "172.16.0.0/25 is too small: the controller manager gives every node a /24 of it"},
		{"fd00:10::/48", `must be an IPv4 CIDR for the flannel CNI, got "fd00:10::/48"`},
		{"nope", `must be an IPv4 CIDR for the flannel CNI, got "nope"`},
	} {
		err := CheckAllocatedPodCIDR(tc.podCIDR)
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("CheckAllocatedPodCIDR(%q) = %v, want %q", tc.podCIDR, err, tc.err)
		}
	}
}

// The choices' spellings, the default first, and what a refused one is told.
func TestCNIChoices(t *testing.T) {
	for s, want := range map[string]CNI{"": CNICilium, "cilium": CNICilium, "bridge": CNIBridge, "flannel": CNIFlannel} {
		if got, err := ParseCNI(s); got != want || err != nil {
			t.Errorf("ParseCNI(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	if _, err := ParseCNI("calico"); err == nil || err.Error() != `must be "cilium", "bridge" or "flannel"` {
		t.Errorf("ParseCNI(calico): %v", err)
	}
}
