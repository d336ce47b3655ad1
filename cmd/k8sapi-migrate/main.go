// Command k8sapi-migrate applies k8sapi's embedded migrations to the
// database at DATABASE_URL (or the one DB_SECRET_ARN names). -platform-dev
// also applies the dev-only platform stand-ins: never in production, where
// other services own those tables.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/excloud/k8sapi/internal/awssecret"
	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/dbmigrate"
)

func main() {
	platformDev := flag.Bool("platform-dev", false, "also apply the dev-only platform tables (local and tests only)")
	flag.Parse()
	if err := run(context.Background(), *platformDev); err != nil {
		fmt.Fprintln(os.Stderr, "k8sapi-migrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, platformDev bool) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	dsn, _, err := awssecret.DatabaseFromEnv(ctx, cfg)
	if err != nil {
		return err
	}
	return dbmigrate.Apply(ctx, dsn, platformDev)
}
