// Command reconciler is the ReconcilerFunction Lambda, run on a schedule
// (every minute): it finishes or undoes foundings and deletions whose
// function died, and retries failed deletions (founding.Reconciler).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/founding"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	ctx := context.Background()
	app, err := wiring.Load(ctx, "KMS_KEY_ID", "COMPUTE_API_URL", "DNS_API_URL", "BOOTSTRAP_BASE_URL")
	if err != nil {
		wiring.Fatal(err)
	}
	r, err := bundle.NewFoundingRenderer()
	if err != nil {
		wiring.Fatal(err)
	}
	token, err := app.ServiceToken(ctx)
	if err != nil {
		wiring.Fatal(err)
	}
	rec := &founding.Reconciler{Service: app.Founding(r), ServiceToken: token}
	// The scheduled event carries nothing the run needs.
	lambda.Start(func(ctx context.Context) (founding.Report, error) {
		rep, err := rec.Run(ctx)
		app.Log.InfoContext(ctx, "reconciler run", "finished", rep.Finished, "failed", rep.Failed,
			"deleted", rep.Deleted, "retrying", rep.Retrying)
		return rep, err
	})
}
