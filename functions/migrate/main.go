// Command migrate is the MigrateFunction Lambda: the pre-traffic hook of
// every deployment, which applies the new build's migrations before any
// traffic moves (internal/deployhook).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/excloud/k8sapi/internal/deployhook"
)

func main() {
	h, err := deployhook.Load(context.Background())
	if err != nil {
		slog.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
