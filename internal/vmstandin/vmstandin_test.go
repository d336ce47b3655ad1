package vmstandin_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/vmstandin"
)

// The initial node reports the addons, the others skip them; every node
// ends ready and reports neither failed nor what k8sapi records itself.
func TestPhases(t *testing.T) {
	initial, other := vmstandin.Phases(vmstandin.ControlPlane, true), vmstandin.Phases(vmstandin.ControlPlane, false)
	if !slices.Contains(initial, clusterfacts.AddonsInstalled) || slices.Contains(other, clusterfacts.AddonsInstalled) {
		t.Fatalf("addons_installed: initial %v, other %v", initial, other)
	}
	for _, phases := range [][]clusterfacts.Phase{initial, other} {
		if phases[0] != clusterfacts.PrerequisitesInstalled || phases[len(phases)-1] != clusterfacts.Ready ||
			slices.Contains(phases, clusterfacts.Failed) || slices.Contains(phases, clusterfacts.BundleFetched) {
			t.Fatalf("phases %v", phases)
		}
	}
}

// A VM IMDS no longer knows (deleted) is not retried and calls k8sapi
// never; a VM booted twice boots once.
func TestDeletedVMStopsAtOnce(t *testing.T) {
	var imdsCalls, apiCalls atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imdsCalls.Add(1)
		http.NotFound(w, r)
	}))
	defer imds.Close()
	api := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { apiCalls.Add(1) }))
	defer api.Close()
	p := vmstandin.New(vmstandin.Config{IMDSBaseURL: imds.URL, APIBaseURL: api.URL, Delay: 10 * time.Millisecond})
	p.Boot(7, vmstandin.ControlPlane)
	p.Boot(7, vmstandin.ControlPlane)
	time.Sleep(200 * time.Millisecond) // twenty Delays: time enough to retry, were it to
	p.Close()
	if imdsCalls.Load() != 1 || apiCalls.Load() != 0 {
		t.Fatalf("IMDS calls %d, k8sapi calls %d; want 1 and 0", imdsCalls.Load(), apiCalls.Load())
	}
}
