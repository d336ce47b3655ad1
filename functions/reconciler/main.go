// Command reconciler is the ReconcilerFunction Lambda, run on a schedule
// (every minute): it finishes or undoes foundings and deletions whose
// function died, and retries failed deletions (reconciler.Reconciler); then
// runs the etcd snapshot schedule (etcdsnapshot.Schedule).
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/reconciler"
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
	rec := &reconciler.Reconciler{Deps: app.UseCases(r, app.OpeningEnvelope()), ServiceToken: token}
	snapshots := &etcdsnapshot.Schedule{Store: app.Store}
	// The scheduled event carries nothing the run needs.
	lambda.Start(func(ctx context.Context) (reconciler.Report, error) {
		// Counted as a request is (internal/metrics): the run's last line
		// says its DB round trips, rows written and KMS calls.
		ctx, _ = metrics.WithCounters(ctx)
		rep, err := rec.Run(ctx)
		app.Log.InfoContext(ctx, "reconciler run", "finished", rep.Finished, "failed", rep.Failed,
			"deleted", rep.Deleted, "retrying", rep.Retrying)
		// The schedule runs whatever the operations did: a failing founding
		// elsewhere must not stop every other cluster's snapshots.
		snap, serr := snapshots.Run(ctx)
		app.Log.InfoContext(ctx, "etcd snapshot schedule", append([]any{"scheduled", snap.Scheduled, "overdue", snap.Overdue,
			"no_node", snap.NoNode, "error", errString(serr)}, metrics.LogAttrs(ctx)...)...)
		return rep, errors.Join(err, serr)
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
