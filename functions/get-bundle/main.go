// Command get-bundle is the GetBundleFunction Lambda:
// GET /bootstrap/control-plane/{vm_id}.
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	wiring.Serve("GetBundleFunction", []string{"KMS_KEY_ID"}, func(app *wiring.App, srv *api.Server) error {
		r, err := bundle.NewRenderer()
		srv.Bundles = app.NodeBootstrap(r)
		return err
	})
}
