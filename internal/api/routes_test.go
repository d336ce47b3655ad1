package api

import (
	"net/http"
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// The routes a VM's shell library calls (bundle.VMRoutes, rendered into
// it) are the routes served with a per-VM budget, the same paths both ways.
func TestVMRoutesAreServed(t *testing.T) {
	var served, called []string
	for _, r := range Routes() {
		if r.PerVM != (vmlimit.Budget{}) {
			served = append(served, r.Path)
		}
	}
	for _, r := range bundle.VMRoutes() {
		called = append(called, r.Path)
	}
	slices.Sort(served)
	served = slices.Compact(served) // a path may take two methods (the snapshot's ask and report)
	slices.Sort(called)
	if !slices.Equal(served, called) {
		t.Errorf("VM routes served %v, called by the shell library %v", served, called)
	}
}

// Every row of the route table has a handler, and a state-changing method
// names its audit action (a read never does). Three GETs change state: the
// bundle fetch (the window's first issues identities), a node's snapshot
// ask (it issues a presigned upload URL, a credential) and a worker's
// bundle fetch (recorded, the start of a node joining).
func TestEveryRouteHasAHandlerAndStateChangesAnAction(t *testing.T) {
	for _, r := range Routes() {
		if r.handle == nil {
			t.Errorf("%s: no handler", r.Key())
		}
		if changes := r.Method != http.MethodGet || r.Path == bundle.PathTemplate || r.Path == bundle.SnapshotPathTemplate || r.Path == bundle.WorkerPathTemplate || r.Path == bundle.RestorePathTemplate; changes != (r.Audit != "") {
			t.Errorf("%s: audit action %q", r.Key(), r.Audit)
		}
	}
}
