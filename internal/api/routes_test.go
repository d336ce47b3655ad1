package api

import (
	"maps"
	"slices"
	"testing"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// The routes a VM's shell library calls (bundle.VMRoutes, rendered into
// it) are the routes served with a per-VM budget, the same paths both ways.
func TestVMRoutesAreServed(t *testing.T) {
	var served, called []string
	for _, r := range Routes {
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

// Each function's handler set serves exactly its rows of Routes: a row
// without a handler would answer 404, a handler without a row is dead.
func TestHandlersServeTheRoutes(t *testing.T) {
	want := map[string][]string{}
	for _, r := range Routes {
		want[r.Function] = append(want[r.Function], r.Key())
	}
	for fn, keys := range want {
		got := slices.Sorted(maps.Keys(HandlersOf(fn)))
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Errorf("%s: handlers for %v, routes %v", fn, got, keys)
		}
	}
	if HandlersOf("ReconcilerFunction") != nil {
		t.Error("the reconciler serves no route")
	}
}
