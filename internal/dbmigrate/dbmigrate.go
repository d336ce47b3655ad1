// Package dbmigrate applies the embedded SQL migrations with tern. It is
// small on purpose: production (cmd/k8sapi-migrate) links it without any
// of the local-only machinery in internal/devstack (localpg applies it).
//
// In: a DSN and whether to include the dev-only platform stand-ins. Out: the
// database at the latest version of each set, each set tracked in its own
// tern version table so the sets advance independently.
package dbmigrate

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/excloud/k8sapi/migrations"
)

type set struct {
	versionTable string
	files        func() fs.FS
	devOnly      bool
	// needsRoles: the set grants to k8sapi's function roles, so it waits
	// until k8sapi's set is at its latest (the roles come with 011).
	needsRoles bool
}

// sets is the truth of what Apply applies, in order. The platform stand-ins
// go first: in production those tables exist before ours. The platform's
// grants to k8sapi's roles go last: in production the platform team grants
// once k8sapi's migrations made the roles.
var sets = []set{
	{versionTable: "schema_version_platformdev", files: migrations.PlatformDev, devOnly: true},
	{versionTable: "schema_version_k8sapi", files: migrations.K8sapi},
	{versionTable: "schema_version_platformdev_grants", files: migrations.PlatformDevGrants, devOnly: true, needsRoles: true},
}

// Apply applies k8sapi's migrations to the database at dsn, and the dev-only
// platform stand-ins too when includePlatformDev is set. Idempotent.
func Apply(ctx context.Context, dsn string, includePlatformDev bool) error {
	return ApplyK8sapiTo(ctx, dsn, includePlatformDev, latest)
}

// latest asks for every migration of a set.
const latest = -1

// ApplyK8sapiTo is Apply with k8sapi's set stopped at version (the platform
// stand-ins, when included, still go to their latest): a database as an
// earlier release left it, for the tests of the migrations that follow.
func ApplyK8sapiTo(ctx context.Context, dsn string, includePlatformDev bool, version int32) error {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parsing the database URL: %w", err)
	}
	return applySets(ctx, cc, includePlatformDev, version)
}

// ApplyConfig applies k8sapi's migrations (never the dev-only sets) over a
// connection the caller shaped: the deployment hook's own statement
// timeout and, with IAM auth, its token. Idempotent, and safe beside
// another run: tern holds an advisory lock while it migrates.
func ApplyConfig(ctx context.Context, cc *pgx.ConnConfig) error {
	return applySets(ctx, cc, false, latest)
}

func applySets(ctx context.Context, cc *pgx.ConnConfig, includePlatformDev bool, version int32) error {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("connecting to apply migrations: %w", err)
	}
	defer conn.Close(context.Background())
	for _, s := range sets {
		if (s.devOnly && !includePlatformDev) || (s.needsRoles && version != latest) {
			continue
		}
		target := int32(latest)
		if !s.devOnly {
			target = version
		}
		if err := applySet(ctx, conn, s, target); err != nil {
			return err
		}
	}
	return nil
}

// applySet migrates one set to target (latest: its last migration).
func applySet(ctx context.Context, conn *pgx.Conn, s set, target int32) error {
	m, err := migrate.NewMigrator(ctx, conn, s.versionTable)
	if err != nil {
		return fmt.Errorf("preparing migrations (%s): %w", s.versionTable, err)
	}
	if err := loadPlain(m, s.files()); err != nil {
		return fmt.Errorf("loading migrations (%s): %w", s.versionTable, err)
	}
	if target == latest {
		target = int32(len(m.Migrations))
	}
	if err := m.MigrateTo(ctx, target); err != nil {
		return fmt.Errorf("applying migrations (%s) to version %d: %w", s.versionTable, target, err)
	}
	return nil
}
