package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
)

// quiet discards the servers' chatter; failures come back as errors.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// once runs start at most once per test binary and remembers its result,
// including a failure, so every test reports the same cause.
type once[T any] struct {
	once sync.Once
	val  T
	err  error
}

func (o *once[T]) get(start func() (T, error)) (T, error) {
	o.once.Do(func() { o.val, o.err = start() })
	return o.val, o.err
}

var (
	pgServer   once[string]
	motoServer once[string]
	logins     once[struct{}]
)

// serverDSN returns the DSN of the shared PostgreSQL server (see server).
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn, err := server()
	if err != nil {
		t.Fatalf("testenv: postgres: %v", err)
	}
	return dsn
}

// server starts or finds the shared PostgreSQL server once. A throwaway
// server lives in a temporary folder for the life of the binary; its
// process dies with the binary (we cannot hook the binary's exit without
// owning TestMain).
func server() (string, error) {
	return pgServer.get(func() (string, error) {
		dir, err := os.MkdirTemp("", "k8sapi-testpg-")
		if err != nil {
			return "", err
		}
		dsn, _, err := localpg.EnsurePostgres(context.Background(), dir, quiet)
		return dsn, err
	})
}

// Postgres returns the DSN of a fresh database with both migration sets
// (k8sapi and the dev platform stand-ins) applied. The database is dropped
// when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, drop, err := FreshDatabase(ctx, "k8sapi_test")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	return dsn
}

// FreshDatabase is Postgres for a program that is no test (make bench's
// fleet): a fresh database named prefix_<random> on the same server, both
// migration sets applied as every test has them, and the drop that removes
// it. A database whose migrations failed is dropped before returning.
func FreshDatabase(ctx context.Context, prefix string) (dsn string, drop func(context.Context) error, err error) {
	srv, err := server()
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	name := localpg.UniqueDatabaseName(prefix)
	if dsn, err = localpg.CreateDatabase(ctx, srv, name); err != nil {
		return "", nil, err
	}
	drop = func(ctx context.Context) error { return localpg.DropDatabase(ctx, srv, name) }
	if err := localpg.ApplyMigrations(ctx, dsn, true); err != nil {
		return "", nil, errors.Join(err, drop(context.Background()))
	}
	return dsn, drop, nil
}

// FunctionDSN returns dsn (a database from Postgres) logged in as function's
// own user, a member of its role only (migration 011): what the function
// does through it fails where a grant is missing, as it would in production.
func FunctionDSN(t testing.TB, dsn, function string) string {
	t.Helper()
	_, err := logins.get(func() (struct{}, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return struct{}{}, localpg.EnsureFunctionLogins(ctx, dsn)
	})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	fdsn, err := localpg.FunctionDSN(dsn, function)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return fdsn
}

// Moto returns the endpoint of the moto_server shared by this test binary.
func Moto(t testing.TB) string {
	t.Helper()
	endpoint, err := motoServer.get(func() (string, error) {
		endpoint, _, err := localaws.StartMoto(context.Background(), "", quiet)
		return endpoint, err
	})
	if err != nil {
		t.Fatalf("testenv: moto: %v", err)
	}
	return endpoint
}

// AWSConfig is the SDK configuration for the moto server at endpoint.
func AWSConfig(endpoint string) aws.Config { return localaws.AWSConfig(endpoint) }

// KMSKey creates a fresh symmetric KMS key in moto and returns a client for
// it and its id. Keys are never shared between tests, so a test may disable
// or schedule deletion of its key.
func KMSKey(t testing.TB) (*kms.Client, string) {
	t.Helper()
	cfg := AWSConfig(Moto(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keyID, err := localaws.CreateKMSKey(ctx, cfg, "")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return kms.NewFromConfig(cfg), keyID
}

// EmptyDatabase returns the DSN of a fresh database with no migration
// applied (named after prefix), on the server Postgres uses, dropped when
// the test ends: what a migration, a deployment's hook or a restore starts
// from.
func EmptyDatabase(t testing.TB, prefix string) string {
	t.Helper()
	server := serverDSN(t)
	name := localpg.UniqueDatabaseName(prefix)
	dsn, err := localpg.CreateDatabase(context.Background(), server, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = localpg.DropDatabase(context.Background(), server, name) })
	return dsn
}

// SnapshotBucket creates a fresh etcd snapshots bucket in moto's S3
// (SSE-KMS under a fresh key, as make local's) and returns its name and the
// SDK configuration that reaches it.
func SnapshotBucket(t testing.TB) (string, aws.Config) {
	t.Helper()
	cfg := AWSConfig(Moto(t))
	_, keyID := KMSKey(t)
	name := fmt.Sprintf("k8sapi-test-%d-%d", os.Getpid(), bucketSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := localaws.CreateBucket(ctx, cfg, name, keyID); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return name, cfg
}

var bucketSeq atomic.Int64
