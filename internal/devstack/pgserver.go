package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
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
	proc *process
}

// StartPostgresServer runs initdb under dir and starts the server on a free
// loopback port, as the postgres user when we are root.
func StartPostgresServer(ctx context.Context, dir string, log *slog.Logger) (*PostgresServer, error) {
	bin, err := postgresBinDir()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	cred, err := postgresCredential(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %w\n%s", data, err, out)
	}
	port, err := freePort()
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
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the server (again) on its port and waits until it answers.
// It does nothing if the server runs.
func (s *PostgresServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return nil
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"),
		"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	p, err := startProcess("postgres", cmd, logWriter{s.log, "postgres"}, syscall.SIGINT)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "postgres", 30*time.Second, p, func(ctx context.Context) error { return pingPostgres(ctx, s.DSN()) }); err != nil {
		p.stop(syscall.SIGKILL, time.Second)
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
	s.proc.stop(syscall.SIGINT, 10*time.Second)
}
