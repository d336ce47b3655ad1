package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound means no row matched (including rows of another org).
var ErrNotFound = errors.New("not found")

// ErrDuplicate means a unique constraint refused the write (an idempotency
// key already used by a committed founding).
var ErrDuplicate = errors.New("duplicate")

// Store runs k8sapi's queries on a pool.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// oneRow is the one row of rows as a T (its columns by name), for what;
// no row is ErrNotFound.
func oneRow[T any](rows pgx.Rows, what string) (T, error) {
	r, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[T])
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, notFound(err))
	}
	return r, nil
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
