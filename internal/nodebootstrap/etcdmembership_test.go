package nodebootstrap

import (
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// Only the removing member (the lowest-ordinal ready node that stays) is
// answered, and only while a scaling is live; never the leaving node.
func TestRemovalsGoToTheRemovingMemberOnly(t *testing.T) {
	at := time.Now()
	m := store.EtcdMembership{ClusterID: 7, Scaling: true, Members: []store.EtcdMember{
		{Ordinal: 1, VMID: 11, Name: "cp-1"}, // not ready: skipped
		{Ordinal: 2, VMID: 12, Name: "cp-2", Ready: true},
		{Ordinal: 3, VMID: 13, Name: "cp-3", Ready: true},
		{Ordinal: 4, VMID: 14, Name: "cp-4", Ready: true, Retiring: true, RemovedAt: &at}, // reported already
		{Ordinal: 5, VMID: 15, Name: "cp-5", Ready: true, Retiring: true},
	}}
	if got := removalsBy(m, 12); len(got) != 1 || got[0].Name != "cp-5" {
		t.Fatalf("the removing member is answered %v, want cp-5", got)
	}
	for _, vm := range []int64{11, 13, 15} {
		if got := removalsBy(m, vm); got != nil {
			t.Errorf("VM %d is answered %v, want nothing", vm, got)
		}
	}
	m.Scaling = false
	if got := removalsBy(m, 12); got != nil {
		t.Errorf("answered %v with no scaling live", got)
	}
}
