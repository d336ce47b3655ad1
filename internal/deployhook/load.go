package deployhook

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/awssecret"
	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/dbmigrate"
)

// Load builds the hook from the environment, once per cold start: the
// owner's credentials (DB_SECRET_ARN, or DATABASE_URL locally) and the
// CodeDeploy client.
func Load(ctx context.Context) (*Hook, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	dsn, awsCfg, err := awssecret.DatabaseFromEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	migrate := migrator(dsn, cfg.DB, config.DBAuthToken(awsCfg))
	return &Hook{Migrate: migrate, CodeDeploy: codeDeploy{aws: awsCfg, client: &http.Client{Timeout: 30 * time.Second}}, Log: log}, nil
}

// migrator applies the build's migrations to the database at dsn, on a
// connection of its own each run.
func migrator(dsn string, db config.DB, token tokenFunc) func(context.Context) error {
	return func(ctx context.Context) error {
		cc, err := connConfig(ctx, dsn, db, token)
		if err != nil {
			return err
		}
		return dbmigrate.ApplyConfig(ctx, cc)
	}
}

// tokenFunc signs an RDS IAM auth token (config.DBAuthToken).
type tokenFunc func(ctx context.Context, host string, port uint16, user string) (string, error)

// connConfig is the hook's connection: its own statement timeout in the
// startup packet (through RDS Proxy, whose InitQuery sets the functions'
// 10 s, a migration would be cut short), and a fresh IAM token per run.
func connConfig(ctx context.Context, dsn string, db config.DB, token tokenFunc) (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the database URL: %w", err)
	}
	if db.StatementTimeout > 0 {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(db.StatementTimeout.Milliseconds(), 10)
	}
	if db.IAMAuth {
		if cc.Password, err = token(ctx, cc.Host, cc.Port, cc.User); err != nil {
			return nil, err
		}
	}
	return cc, nil
}
