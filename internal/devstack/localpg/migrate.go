package localpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/dbmigrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ApplyMigrations applies k8sapi's migrations to the database at dsn, and the
// dev-only platform stand-ins too when includePlatformDev is set (see
// internal/dbmigrate, which production links without this package).
func ApplyMigrations(ctx context.Context, dsn string, includePlatformDev bool) error {
	return dbmigrate.Apply(ctx, dsn, includePlatformDev)
}

// UniqueDatabaseName returns prefix_<16 hex chars>, a valid unquoted
// identifier unlikely to collide across parallel test binaries.
func UniqueDatabaseName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// CreateDatabase creates database name on the server at serverDSN unless it
// exists, and returns a DSN for it.
func CreateDatabase(ctx context.Context, serverDSN, name string) (string, error) {
	conn, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		return "", fmt.Errorf("connecting to create database %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("looking up database %s: %w", name, err)
	}
	for attempt := 0; !exists; attempt++ {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		if err == nil {
			break
		}
		// 55006: someone is connected to template1 (another CREATE DATABASE
		// copying it, typically a parallel test binary). Brief; try again.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" && attempt < 20 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return WithDatabase(serverDSN, name)
}

// DropDatabase drops database name, disconnecting its sessions (PG 13+).
func DropDatabase(ctx context.Context, serverDSN, name string) error {
	conn, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		return fmt.Errorf("connecting to drop database %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping database %s: %w", name, err)
	}
	return nil
}

// WithDatabase returns dsn pointing at database name.
func WithDatabase(dsn, name string) (string, error) {
	return editDSN(dsn, func(u *url.URL) { u.Path, u.RawPath = "/"+name, "" }, "dbname="+name)
}

// WithUser returns dsn logging in as user, without a password (the local
// servers trust their clients).
func WithUser(dsn, user string) (string, error) {
	return editDSN(dsn, func(u *url.URL) { u.User = url.User(user) }, "user="+user+" password=''")
}

// editDSN changes a DSN in either form pgx accepts: a URL (postgres://...)
// through edit, a keyword/value string by appending keywords (a later
// keyword overrides an earlier one).
func editDSN(dsn string, edit func(*url.URL), keywords string) (string, error) {
	if !strings.Contains(dsn, "://") {
		return strings.TrimSpace(dsn) + " " + keywords, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parsing DSN: %w", err) // the DSN itself may hold a password: not echoed
	}
	edit(u)
	return u.String(), nil
}
