package localpg

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/proc"
)

// PostgresServer is a throwaway PostgreSQL server of its own, for tests that
// stop and start the database under a running service (fault injection). It
// never reuses a server that answers at DATABASE_URL or 127.0.0.1:5432: a
// test must not stop a server others share. It keeps its port across Stop
// and Start, so clients' DSNs and pools stay valid.
type PostgresServer struct {
	dir, bin string
	port     int
	cred     *syscall.Credential
	log      *slog.Logger

	mu   sync.Mutex
	proc *proc.Process
}

// StartPostgresServer runs initdb under dir and starts the server on a free
// loopback port, as the postgres user when we are root.
func StartPostgresServer(ctx context.Context, dir string, log *slog.Logger) (*PostgresServer, error) {
	bin, dir, cred, err := serverDir(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := initdb(ctx, bin, data, cred).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %w\n%s", data, err, out)
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	s := &PostgresServer{dir: dir, bin: bin, port: port, cred: cred, log: log}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// DSN is the server's postgres database, user postgres, trust auth.
func (s *PostgresServer) DSN() string {
	return localDSN(s.port)
}

// Start starts the server (again) on its port and waits until it answers.
// It does nothing if the server runs.
func (s *PostgresServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.Exited() {
		return nil
	}
	p, err := startServer(ctx, s.bin, s.dir, s.port, s.cred, s.log)
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Stop shuts the server down (fast shutdown: clients are disconnected, open
// transactions abort) and waits until it has exited. Safe to call twice.
func (s *PostgresServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc.Stop(syscall.SIGINT, 10*time.Second)
}
