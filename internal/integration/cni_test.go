package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// A cluster founded with "cni": "bridge" is stored with it, shown with it
// by every view, and its nodes' bundles carry the bridge CNI: each node's
// own pod subnet by ordinal, routes to its peers' at their addresses, and
// nothing of Cilium.
func TestBridgeClusterOnRequest(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3,"cni":"bridge"}`)
	id := itoa(res.ClusterID)
	var stored string
	if err := s.pool.QueryRow(context.Background(), `SELECT cni FROM kube_clusters WHERE id = $1`, res.ClusterID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	var one apitypes.ClusterView
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+id, "", s.Bearer(1)).JSON(t, &one)
	var list struct {
		Clusters []apitypes.ClusterView `json:"clusters"`
	}
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1)).JSON(t, &list)
	if res.CNI != "bridge" || stored != "bridge" || one.CNI != "bridge" || len(list.Clusters) != 1 || list.Clusters[0].CNI != "bridge" {
		t.Fatalf("cni: founded %q, stored %q, GET %q, list %+v", res.CNI, stored, one.CNI, list.Clusters)
	}

	addresses := map[int64]string{}
	for _, n := range one.Nodes {
		addresses[n.VMID] = n.IPv4
	}
	for i, vmID := range res.ControlPlaneVMIDs {
		imds, access := s.VMCredentials(vmID)
		var b bundleBody
		s.FetchBundle(vmID, imds, access).JSON(t, &b)
		subnets := []string{"172.16.0.0/24", "172.16.1.0/24", "172.16.2.0/24"}
		routes := b.Files["/usr/local/bin/exk8s-pod-network.sh"]
		if !strings.Contains(b.Files["/etc/cni/net.d/10-exk8s.conflist"], `"subnet": "`+subnets[i]+`"`) ||
			!strings.Contains(routes, "NODE_POD_SUBNET='"+subnets[i]+"'\n") ||
			!strings.Contains(b.Files["/etc/exk8s/config/cluster.env"], "\nCNI='bridge'\n") {
			t.Errorf("vm %d (ordinal %d): not its own pod subnet %s", vmID, i+1, subnets[i])
		}
		for j, peer := range res.ControlPlaneVMIDs {
			want := "'" + subnets[j] + "' '" + addresses[peer] + "'"
			if present := strings.Contains(routes, want); present != (i != j) {
				t.Errorf("vm %d: route %s present %v, want %v", vmID, want, present, i != j)
			}
		}
		if _, ok := b.Files["/etc/exk8s/config/cilium-values.yaml"]; ok || strings.Contains(b.Files["/etc/exk8s/config/cluster.env"], "HELM_") {
			t.Errorf("vm %d: a bridge bundle carries Cilium's values or helm", vmID)
		}
	}
}
