package integration

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// TestConcurrentBundleFetches: 200 fetches at once over one loopback
// server, spread over every VM of four clusters in two orgs. None is a 5xx,
// and every bundle is its own VM's: its vm_id, node name and cluster.
func TestConcurrentBundleFetches(t *testing.T) {
	s := newStack(t)
	type vm struct {
		id, cluster  int64
		imds, access string
		name         string
	}
	var vms []vm
	for _, org := range []int64{1, 2, 1, 2} {
		res := s.Found(org, stacktest.ThreeNodes)
		for _, id := range res.ControlPlaneVMIDs {
			imds, access := s.VMCredentials(id)
			vms = append(vms, vm{id, res.ClusterID, imds, access, nodeNameOf(t, s, id)})
		}
	}
	const n = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range n {
		v := vms[i%len(vms)]
		wg.Go(func() {
			r := s.FetchBundle(v.id, v.imds, v.access)
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
			if r.Status != http.StatusOK {
				t.Errorf("vm %d: %d %s", v.id, r.Status, r.Body)
				return
			}
			var b bundleBody
			r.JSON(t, &b)
			if b.VMID != v.id || b.ClusterID != v.cluster || b.NodeName != v.name {
				t.Errorf("vm %d of cluster %d got the bundle of vm %d, cluster %d, node %q", v.id, v.cluster, b.VMID, b.ClusterID, b.NodeName)
			}
		})
	}
	wg.Wait()
	t.Logf("%d concurrent bundle fetches over %d VMs: statuses %v", n, len(vms), statuses)
	if statuses[http.StatusOK] != n {
		t.Errorf("statuses %v, want %d × 200", statuses, n)
	}
}

func nodeNameOf(t *testing.T, s *stack, vmID int64) string {
	t.Helper()
	var name string
	if err := s.pool.QueryRow(context.Background(), `SELECT node_name FROM kube_nodes WHERE vm_id = $1`, vmID).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}
