package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The addons step as it stands in the row: done once the pass's version
// is applied, paused naming the node on its failure or once its bound
// passed with no report, waiting otherwise.
func TestAddonsStepJudgesTheRow(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	asked := func(ago time.Duration) *time.Time { at := now.Add(-ago); return &at }
	s := &Service{Deps: &usecase.Deps{Now: func() time.Time { return now }}}
	const node = "cp-4.cluster-7.internal"
	for _, c := range []struct {
		name string
		u    store.Upgrade
		want string // "" done, "wait", or the pause's reason in part
	}{
		{"applied", store.Upgrade{PassVersion: "v1.36.3", AddonsVersion: "v1.36.3"}, ""},
		{"asked, within the bound", store.Upgrade{PassVersion: "v1.36.3", AddonsNode: node, AddonsAskedAt: asked(bundle.AddonsReportWithin - time.Minute)}, "wait"},
		{"an earlier pass applied", store.Upgrade{PassVersion: "v1.37.1", AddonsVersion: "v1.36.3", AddonsNode: node, AddonsAskedAt: asked(time.Minute)}, "wait"},
		{"failed", store.Upgrade{PassVersion: "v1.36.3", AddonsNode: node, AddonsAskedAt: asked(time.Minute), AddonsFailure: "applying coredns.yaml: Forbidden"},
			"gate addons: " + node + " could not apply the addons at v1.36.3: applying coredns.yaml: Forbidden"},
		{"no report in time", store.Upgrade{PassVersion: "v1.36.3", AddonsNode: node, AddonsAskedAt: asked(bundle.AddonsReportWithin + time.Minute)},
			"gate addons: " + node + " did not report the addons at v1.36.3 applied within"},
	} {
		err := s.addons(context.Background(), &run{u: c.u}, now)
		var p *paused
		switch {
		case c.want == "" && err != nil, c.want == "wait" && (err == nil || errors.As(err, &p)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want != "" && c.want != "wait" && (!errors.As(err, &p) || p.node != node || !strings.Contains(p.reason, c.want)):
			t.Errorf("%s: %v, want paused at %s: %s", c.name, err, node, c.want)
		}
	}
}

// The addons' node is the lowest-ordinal ready control-plane node at the
// pass's version with a VM, not retiring; none when no node is.
func TestAddonsNodeIsTheLowestReadyAtThePass(t *testing.T) {
	ready := time.Now()
	n := func(ordinal int, version string, vm int64, retiring, isReady bool) store.Node {
		node := store.Node{Ordinal: ordinal, Name: "cp-" + string(rune('0'+ordinal)), KubernetesVersion: version, VMID: vm,
			Retiring: retiring, Role: store.RoleControlPlane, Phase: "apiserver_ready"}
		if isReady {
			node.Phase, node.ReadyAt = "ready", &ready
		}
		return node
	}
	nodes := []store.Node{n(3, "v1.35.4", 3, true, true), n(4, "v1.36.3", 4, false, false), n(5, "v1.36.3", 0, false, true),
		n(6, "v1.36.3", 6, true, true), n(7, "v1.36.3", 7, false, true), n(8, "v1.36.3", 8, false, true)}
	if got, ok := addonsNode(nodes, "v1.36.3"); !ok || got.Ordinal != 7 {
		t.Errorf("chose %+v (%v), want cp-7", got, ok)
	}
	if got, ok := addonsNode(nodes[:4], "v1.36.3"); ok {
		t.Errorf("chose %s among no ready live node at the pass", got.Name)
	}
}
