package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/controlplane"
	engine "github.com/excloud/k8sapi/internal/operation"
	"github.com/excloud/k8sapi/internal/store"
)

// addons moves the cluster addons (kube-proxy, CoreDNS, the CNI's
// DaemonSet) to the pass's release once every API server is at it, before
// any pool moves: kube-proxy may not be newer than the API servers, nor
// left more than three minors behind them. k8sapi holds no credential of
// the cluster, so a control-plane node at the pass's version applies
// them: the step records the node it chooses before any node is answered
// (a cut-off chooses no second one), that node's timer asks the addons
// route, which answers it alone the manifests rendered at the pass's
// release by the renderer the founding's bundle uses, and its report
// moves the step on. A failed apply, or no report within
// bundle.AddonsReportWithin, pauses the upgrade naming the node; a resume
// chooses again. Applying is idempotent, so a node that applied but whose
// report was lost applies again.
func (s *Service) addons(ctx context.Context, r *run, _ time.Time) error {
	u := r.u
	switch {
	case u.AddonsVersion == u.PassVersion:
		return nil
	case u.AddonsNode == "":
		return s.chooseAddonsNode(ctx, r)
	case u.AddonsFailure != "":
		return &paused{node: u.AddonsNode, reason: fmt.Sprintf("gate addons: %s could not apply the addons at %s: %s",
			u.AddonsNode, u.PassVersion, u.AddonsFailure)}
	case u.AddonsAskedAt != nil && s.Clock().Sub(*u.AddonsAskedAt) > bundle.AddonsReportWithin:
		return &paused{node: u.AddonsNode, reason: fmt.Sprintf("gate addons: %s did not report the addons at %s applied within %s",
			u.AddonsNode, u.PassVersion, bundle.AddonsReportWithin)}
	}
	return engine.Wait(fmt.Sprintf("%s applies the addons at %s", u.AddonsNode, u.PassVersion))
}

// chooseAddonsNode records the node that applies the pass's addons (and
// clears an earlier failure), or pauses when no node can.
func (s *Service) chooseAddonsNode(ctx context.Context, r *run) error {
	n, ok := addonsNode(r.nodes, r.u.PassVersion)
	if !ok {
		return &paused{reason: fmt.Sprintf("gate addons: no control-plane node at %s is ready to apply the addons", r.u.PassVersion)}
	}
	now := s.Clock()
	if err := s.record(ctx, r, func(u *store.Upgrade) { u.AddonsNode, u.AddonsAskedAt, u.AddonsFailure = n.Name, &now, "" }); err != nil {
		return err
	}
	return engine.Wait(fmt.Sprintf("%s is asked to apply the addons at %s", n.Name, r.u.PassVersion))
}

// addonsNode is the node that applies the addons at version: the
// lowest-ordinal ready control-plane node at it, with a VM and not
// retiring (as the snapshot's and the etcd removals' nodes are chosen).
func addonsNode(nodes []store.Node, version string) (store.Node, bool) {
	for _, n := range live(controlplane.ControlPlaneOf(nodes)) {
		if n.KubernetesVersion == version && ready(n) {
			return n, true
		}
	}
	return store.Node{}, false
}
