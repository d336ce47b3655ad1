package api

import (
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
	slices.Sort(called)
	if !slices.Equal(served, called) {
		t.Errorf("VM routes served %v, called by the shell library %v", served, called)
	}
}
