// Command create-cluster is the CreateClusterFunction Lambda: POST /clusters.
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	required := []string{"KMS_KEY_ID", "COMPUTE_API_URL", "DNS_API_URL", "BOOTSTRAP_BASE_URL"}
	wiring.Serve("CreateClusterFunction", required, func(app *wiring.App, srv *api.Server) error {
		r, err := bundle.NewFoundingRenderer()
		srv.Founder = app.Founding(r)
		return err
	})
}
