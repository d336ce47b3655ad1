// Command create-cluster is the CreateClusterFunction Lambda: POST /clusters
// and POST /clusters/{id}/kubeconfig, the two routes that issue an
// operator's admin kubeconfig (the only API routes that open a cluster CA).
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	required := []string{"KMS_KEY_ID", "COMPUTE_API_URL", "DNS_API_URL", "BOOTSTRAP_BASE_URL"}
	wiring.Serve(api.CreateClusterFunction, required, func(app *wiring.App, srv *api.Server) error {
		r, err := bundle.NewFoundingRenderer()
		wiring.ServeFounding(srv, app.UseCases(r, app.Envelope()))
		srv.Audit = app.Store // migration 014 grants it the insert
		return err
	})
}
