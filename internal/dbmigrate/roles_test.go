package dbmigrate_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/testenv"
)

// Migration 011 makes exactly dbroles' roles, each a group that cannot log
// in, and gives each the schema (the roles with rights here are those).
func TestFunctionRolesAreDbroles(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT DISTINCT a.grantee::regrole::text FROM pg_namespace n, aclexplode(n.nspacl) a
		WHERE n.nspname = current_schema() AND a.grantee::regrole::text LIKE 'k8sapi\_%' ORDER BY 1`)
	granted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(granted, dbroles.Roles()) {
		t.Errorf("roles with the schema %v, want dbroles' %v", granted, dbroles.Roles())
	}
	var logins int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = ANY($1) AND (rolcanlogin OR rolsuper OR rolcreaterole)`,
		dbroles.Roles()).Scan(&logins); err != nil || logins != 0 {
		t.Errorf("%d function roles can log in or administer (%v)", logins, err)
	}
}
