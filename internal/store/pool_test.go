package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

// The default pool is the RDS Proxy shape: two connections, a statement
// timeout from the startup packet, and parameterised queries that leave no
// named prepared statement on the server (the thing that pins a proxy
// session). The contrast, pgx's own default mode, shows the check can fail.
func TestDefaultPoolLeavesNothingToPin(t *testing.T) {
	ctx := t.Context()
	dsn := testenv.Postgres(t)
	pool, err := store.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if got := pool.Config().MaxConns; got != 2 {
		t.Errorf("MaxConns = %d, want 2", got)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var timeout string
	if err := conn.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout); err != nil || timeout != "10s" {
		t.Errorf("statement_timeout = %q (%v), want 10s", timeout, err)
	}
	if n := namedStatementsAfterQuery(t, conn.Conn()); n != 0 {
		t.Errorf("default pool left %d named prepared statements", n)
	}

	plain, err := pgx.Connect(ctx, dsn) // pgx's default: cache_statement
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	if n := namedStatementsAfterQuery(t, plain); n == 0 {
		t.Error("contrast: pgx's default mode left no named statement, so this test proves nothing")
	}
}

func namedStatementsAfterQuery(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	ctx := t.Context()
	var one int
	if err := conn.QueryRow(ctx, "SELECT $1::int", 1).Scan(&one); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE name <> ''").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Settings override the defaults; a mode that would pin is refused; the
// password hook is asked for every new connection with its host, port and
// user, and its failure fails the connection.
func TestOpenPoolSettings(t *testing.T) {
	ctx := t.Context()
	dsn := testenv.Postgres(t)
	var asked []string
	pool, err := store.OpenPool(ctx, dsn, store.PoolSettings{
		MaxConns: 1, QueryExecMode: "simple_protocol", StatementTimeout: 1500 * time.Millisecond,
		Password: func(_ context.Context, host string, port uint16, user string) (string, error) {
			asked = append(asked, host, user)
			if port == 0 {
				return "", errors.New("no port")
			}
			return "token", nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var timeout string
	if err := pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout); err != nil || timeout != "1500ms" {
		t.Errorf("statement_timeout = %q (%v), want 1500ms", timeout, err)
	}
	cfg := pool.Config()
	if cfg.MaxConns != 1 || cfg.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeSimpleProtocol {
		t.Errorf("MaxConns %d, mode %v", cfg.MaxConns, cfg.ConnConfig.DefaultQueryExecMode)
	}
	if len(asked) != 2 || asked[0] != cfg.ConnConfig.Host || asked[1] != cfg.ConnConfig.User {
		t.Errorf("password hook asked %q", asked)
	}

	failing, err := store.OpenPool(ctx, dsn, store.PoolSettings{
		Password: func(context.Context, string, uint16, string) (string, error) {
			return "", errors.New("signing refused")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	if err := failing.Ping(ctx); err == nil || !strings.Contains(err.Error(), "signing refused") {
		t.Errorf("ping with a failing password hook: %v", err)
	}

	_, err = store.OpenPool(ctx, dsn, store.PoolSettings{QueryExecMode: "cache_statement"})
	if err == nil || !strings.Contains(err.Error(), "would pin proxy sessions") {
		t.Errorf("cache_statement: %v", err)
	}
}
