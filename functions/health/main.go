// Command health is the HealthFunction Lambda: GET /health (?deep=1 pings
// Postgres and KMS).
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/apidocs"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	wiring.Serve(api.HealthFunction, nil, func(app *wiring.App, srv *api.Server) error {
		srv.Checks = app.HealthChecks()
		srv.Docs = apidocs.Document{}
		srv.DefaultKubernetesVersion = app.Config.KubernetesVersion
		return nil
	})
}
