package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolSettings shape a function's pool. The zero value of each field is the
// shape for Lambda behind RDS Proxy (docs/RUNBOOK.md, "Database connections"): one
// execution environment serves one request at a time, so it needs one
// connection for a transaction and one for a read beside it, kept briefly
// and never holding server-side state a proxy would have to pin.
type PoolSettings struct {
	// MaxConns: default 2.
	MaxConns int32
	// ConnMaxLifetime closes a connection this old (or this long idle) on its
	// next use; keep it below the proxy's idle client timeout so the pool
	// retires a connection before the proxy drops it. Default 5 minutes.
	ConnMaxLifetime time.Duration
	// StatementTimeout is sent as a startup parameter (never a SET, which
	// pins a proxy session): a stuck query fails with an error well inside
	// the function's timeout. Default 10 seconds.
	StatementTimeout time.Duration
	// QueryExecMode: "exec" (default) or "simple_protocol". Neither creates
	// a named prepared statement, which pins a proxy session; pgx's own
	// default (cache_statement) does.
	QueryExecMode string
	// Password, when set, supplies each new connection's password (an RDS
	// IAM auth token, which expires: hence per connection, not in the DSN).
	Password func(ctx context.Context, host string, port uint16, user string) (string, error)
	// Tracer may be nil.
	Tracer pgx.QueryTracer
}

const (
	defaultMaxConns         = 2
	defaultConnMaxLifetime  = 5 * time.Minute
	defaultStatementTimeout = 10 * time.Second
)

// queryExecModes are the modes PoolSettings accepts.
var queryExecModes = map[string]pgx.QueryExecMode{
	"":                pgx.QueryExecModeExec,
	"exec":            pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// Open connects a pool to dsn in the default shape (tracer may be nil).
// No connection is made until the first query.
func Open(ctx context.Context, dsn string, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	return OpenPool(ctx, dsn, PoolSettings{Tracer: tracer})
}

// OpenPool connects a pool to dsn shaped by s.
func OpenPool(ctx context.Context, dsn string, s PoolSettings) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing database DSN: %w", err)
	}
	if err := s.apply(cfg); err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening database pool: %w", err)
	}
	return pool, nil
}

func (s PoolSettings) apply(cfg *pgxpool.Config) error {
	mode, ok := queryExecModes[s.QueryExecMode]
	if !ok {
		return fmt.Errorf("database pool: query exec mode %q would pin proxy sessions (use exec or simple_protocol)", s.QueryExecMode)
	}
	cfg.MaxConns = orDefault(s.MaxConns, defaultMaxConns)
	cfg.MaxConnLifetime = orDefault(s.ConnMaxLifetime, defaultConnMaxLifetime)
	// Lambda freezes the environment between requests, so no timer fires
	// then; pgxpool checks age on acquire and pings a connection idle for
	// over a second, so a connection the proxy closed is replaced, not used.
	cfg.MaxConnIdleTime = cfg.MaxConnLifetime
	cfg.MaxConnLifetimeJitter = 0
	cc := cfg.ConnConfig
	cc.DefaultQueryExecMode = mode
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(orDefault(s.StatementTimeout, defaultStatementTimeout).Milliseconds(), 10)
	cc.Tracer = s.Tracer
	if s.Password != nil {
		cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
			pw, err := s.Password(ctx, cc.Host, cc.Port, cc.User)
			cc.Password = pw
			return err
		}
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
