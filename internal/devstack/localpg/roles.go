package localpg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/dbroles"
)

// EnsureFunctionLogins creates, on the server of dsn, each function's login
// user (dbroles.Login), a member of its role and of nothing else, as a
// deployment creates one per function. Users belong to the whole server
// and many test databases are set up at once, so one that exists is taken
// as is (a racing CREATE ROLE fails with unique_violation). The roles come
// from migration 011: run it first.
func EnsureFunctionLogins(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connecting to create the function logins: %w", err)
	}
	defer conn.Close(context.Background())
	for _, role := range dbroles.Roles() {
		if _, err := conn.Exec(ctx, createLogin(role)); err != nil {
			return fmt.Errorf("creating the login of %s: %w", role, err)
		}
	}
	return nil
}

// createLogin is a DO block (CREATE ROLE takes no parameters; both names
// are quoted identifiers from dbroles' table).
func createLogin(role string) string {
	return fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN IN ROLE %s;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		pgx.Identifier{dbroles.Login(role)}.Sanitize(), pgx.Identifier{role}.Sanitize())
}

// FunctionDSN is dsn logged in as function's own user.
func FunctionDSN(dsn, function string) (string, error) {
	role, ok := dbroles.Functions[function]
	if !ok {
		return "", fmt.Errorf("no database role for function %s", function)
	}
	return WithUser(dsn, dbroles.Login(role))
}
