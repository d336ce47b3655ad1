// Command clusters is the ClustersFunction Lambda: GET /clusters,
// GET /clusters/{id} and DELETE /clusters/{id}.
package main

import (
	"context"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/lambdaserve"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	app, err := wiring.Load(context.Background(), "KMS_KEY_ID", "COMPUTE_API_URL", "DNS_API_URL")
	if err != nil {
		wiring.Fatal(err)
	}
	renderer, err := bundle.NewRenderer()
	if err != nil {
		wiring.Fatal(err)
	}
	srv := app.Server()
	srv.Clusters = app.Founding(renderer)
	lambdaserve.Start(srv.Handler("ClustersFunction"))
}
