// Command get-bundle is the GetBundleFunction Lambda:
// GET /bootstrap/control-plane/{vm_id}.
package main

import (
	"context"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/lambdaserve"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	app, err := wiring.Load(context.Background(), "KMS_KEY_ID")
	if err != nil {
		wiring.Fatal(err)
	}
	renderer, err := bundle.NewRenderer()
	if err != nil {
		wiring.Fatal(err)
	}
	srv := app.Server()
	srv.Bundles = app.NodeBootstrap(renderer)
	lambdaserve.Start(srv.Handler("GetBundleFunction"))
}
