package dbmigrate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/dbmigrate"
	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/migrations"
)

// Migration 011 run by several databases' migrations at once (roles belong
// to the whole server, and tests migrate many databases at the same time)
// creates each role once and fails none of them, even when each migration
// holds its transaction open while the others create the same roles. The
// roles carry a name of this test's own, so they do not exist yet (the race
// is real) and the roles other tests use are left alone.
func TestFunctionRolesMigrationIsRaceSafe(t *testing.T) {
	ctx := context.Background()
	admin := testenv.Postgres(t)
	sql, renamed := renamedRoles(t)
	t.Cleanup(func() { dropRoles(t, admin, renamed) }) // after the databases holding their grants are dropped
	var dsns []string
	for range 4 {
		dsn := emptyDatabase(t)
		if err := dbmigrate.ApplyK8sapiTo(ctx, dsn, true, 10); err != nil {
			t.Fatal(err)
		}
		dsns = append(dsns, dsn)
	}
	start, errs := make(chan struct{}), make(chan error, len(dsns))
	for _, dsn := range dsns {
		go func() { <-start; errs <- runHeldOpen(ctx, dsn, sql) }()
	}
	close(start)
	for range dsns {
		if err := <-errs; err != nil {
			t.Errorf("a concurrent migration 011 failed: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = ANY($1) AND NOT rolcanlogin`, renamed).Scan(&n); err != nil || n != len(renamed) {
		t.Errorf("%d of %d roles made (%v)", n, len(renamed), err)
	}
}

// renamedRoles is migration 011's text with every role given this test's
// prefix, and the renamed roles.
func renamedRoles(t *testing.T) (string, []string) {
	b, err := fs.ReadFile(migrations.K8sapi(), "011_function_roles.sql")
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := "k8sapi_race" + hex.EncodeToString(suffix) + "_"
	sql, renamed := string(b), []string{}
	for _, role := range dbroles.Roles() {
		to := prefix + strings.TrimPrefix(role, "k8sapi_")
		sql = regexp.MustCompile(`\b`+role+`\b`).ReplaceAllString(sql, to)
		renamed = append(renamed, to)
	}
	return sql, renamed
}

// runHeldOpen runs sql in a transaction it keeps open a moment, so the
// others' CREATE ROLE wait on its uncommitted roles.
func runHeldOpen(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		return nil
	})
}

func dropRoles(t *testing.T, dsn string, roles []string) {
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	for _, r := range roles {
		if _, err := conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{r}.Sanitize()); err != nil {
			t.Errorf("dropping %s: %v", r, err)
		}
	}
}
