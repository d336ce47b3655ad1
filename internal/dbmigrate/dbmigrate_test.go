package dbmigrate_test

import (
	"context"
	"testing"

	"github.com/excloud/k8sapi/internal/dbmigrate"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// Production applies only k8sapi's set: no platform stand-ins appear, and a
// second run (or the dev set later) changes nothing it should not.
func TestApplyWithoutPlatformDev(t *testing.T) {
	ctx := context.Background()
	server := testenv.Postgres(t) // a server we may create databases on
	name := localpg.UniqueDatabaseName("k8sapi_prod")
	dsn, err := localpg.CreateDatabase(ctx, server, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = localpg.DropDatabase(context.Background(), server, name) })
	for range 2 {
		if err := dbmigrate.Apply(ctx, dsn, false); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exists := func(table string) bool {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists("kube_clusters") || !exists("schema_version_k8sapi") {
		t.Fatal("k8sapi tables missing")
	}
	if exists("principal_tokens") || exists("schema_version_platformdev") {
		t.Fatal("dev-only platform tables applied without asking")
	}
	if err := dbmigrate.Apply(ctx, dsn, true); err != nil || !exists("principal_tokens") {
		t.Fatalf("adding the dev set later: %v", err)
	}
}
