// Command health is the HealthFunction Lambda: GET /health (?deep=1 pings
// Postgres and KMS).
package main

import (
	"context"

	"github.com/excloud/k8sapi/internal/lambdaserve"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	app, err := wiring.Load(context.Background())
	if err != nil {
		wiring.Fatal(err)
	}
	srv := app.Server()
	srv.Checks = app.HealthChecks()
	lambdaserve.Start(srv.Handler("HealthFunction"))
}
