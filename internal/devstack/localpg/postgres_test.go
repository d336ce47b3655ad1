package localpg

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
)

// The throwaway path, forced: initdb and postgres as the postgres user in a
// folder handed to it, a free port, and stop leaves no process behind.
func TestThrowawayPostgres(t *testing.T) {
	if _, err := postgresBinDir(); err != nil {
		t.Fatalf("this machine should have PostgreSQL binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "k8sapi-pgtest-") // not t.TempDir: its parent is closed to other users
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	dsn, stop, err := startThrowawayPostgres(ctx, dir, devtest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if strings.Contains(dsn, ":5432/") {
		t.Fatalf("dsn %s: expected a free port, not the default", dsn)
	}
	name := UniqueDatabaseName("throwaway")
	db, err := CreateDatabase(ctx, dsn, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyMigrations(ctx, db, false); err != nil {
		t.Fatal(err)
	}
	// Idempotent: a second run applies nothing and fails nothing.
	if err := ApplyMigrations(ctx, db, true); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := pingPostgres(ctx, dsn); err == nil {
		t.Fatal("postgres still answers after stop")
	}
	stop() // safe twice
}
