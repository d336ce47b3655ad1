// Command get-bundle is the GetBundleFunction Lambda, k8sapi's VM-facing
// function: GET /bootstrap/control-plane/{vm_id} (the bundle) and
// POST /bootstrap/control-plane/{vm_id}/status (the VM's bootstrap phase) and
// POST /bootstrap/control-plane/{vm_id}/renew (a ready node's certificates).
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/vmlimit"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	wiring.Serve(api.GetBundleFunction, []string{"KMS_KEY_ID"}, func(app *wiring.App, srv *api.Server) error {
		r, err := bundle.NewBundleRenderer()
		nodes := app.NodeBootstrap(r)
		srv.Bundles, srv.Renewals = nodes, nodes
		srv.Progress = &progress.Service{Store: app.Store}
		srv.Limits = &vmlimit.Limiter{Factor: app.Config.VMCallBudgetFactor}
		return err
	})
}
