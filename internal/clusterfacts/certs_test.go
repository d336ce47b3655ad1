package clusterfacts

import (
	"net"
	"testing"
)

var cluster = Cluster{ID: 42, OrgID: 7, ControlPlaneDNSName: "exk8s-7-2a.k8s.example",
	ClusterDomain: "corp.example", ServiceCIDR: "10.96.0.0/12"}

// The facts carry the cluster's own domain and its first service IP.
func TestCertSubject(t *testing.T) {
	facts, err := cluster.CertSubject(Node{Name: "cp-1", IPv4: "10.0.0.11"})
	if err != nil {
		t.Fatal(err)
	}
	if facts.ClusterDomain != "corp.example" || !facts.ServiceIP.Equal(net.ParseIP("10.96.0.1")) || facts.Name != "cp-1" {
		t.Errorf("facts %+v", facts)
	}
	bad := cluster
	bad.ServiceCIDR = "nope"
	if _, err := bad.CertSubject(Node{}); err == nil {
		t.Error("a bad service CIDR gave facts")
	}
}
