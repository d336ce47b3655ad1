package devstack

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultLocalPostgres is the server tried when DATABASE_URL is unset or
// silent: a system PostgreSQL on the default port with trust auth.
const DefaultLocalPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// EnsurePostgres returns the DSN of a PostgreSQL server that answers, in this
// order: DATABASE_URL (if set and it answers), 127.0.0.1:5432 (trust auth,
// user postgres), or a throwaway cluster it starts under dir. stop shuts down
// whatever it started (a no-op when it reused a server) and is safe to call
// more than once.
func EnsurePostgres(ctx context.Context, dir string, log *slog.Logger) (dsn string, stop func(), err error) {
	if env := os.Getenv("DATABASE_URL"); env != "" {
		if err := pingPostgres(ctx, env); err == nil {
			log.Debug("postgres: using DATABASE_URL")
			return env, func() {}, nil
		} else {
			log.Warn("postgres: DATABASE_URL does not answer; trying others", "err", err)
		}
	}
	if err := pingPostgres(ctx, DefaultLocalPostgres); err == nil {
		log.Debug("postgres: using the server on 127.0.0.1:5432")
		return DefaultLocalPostgres, func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err // cancelled: the pings failed for that, not for want of a server
	}
	return startThrowawayPostgres(ctx, dir, log)
}

// pingPostgres connects and pings within a short deadline.
func pingPostgres(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// postgresBinDir finds a directory holding both initdb and postgres: the one
// initdb on PATH resolves to, else the newest /usr/lib/postgresql/*/bin
// (Debian installs the server binaries there, off PATH).
func postgresBinDir() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(debian, func(i, j int) bool { return pgMajor(debian[i]) > pgMajor(debian[j]) })
	candidates = append(candidates, debian...)
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", &MissingDependencyError{
		What:    "PostgreSQL server binaries (initdb, postgres) and no server answers at DATABASE_URL or 127.0.0.1:5432",
		Install: "apt-get install postgresql",
	}
}

// pgMajor extracts 15 from /usr/lib/postgresql/15/bin (0 if not a number).
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// startThrowawayPostgres runs initdb (once) and postgres under dir, on a
// free loopback port, with trust auth for user postgres.
func startThrowawayPostgres(ctx context.Context, dir string, log *slog.Logger) (string, func(), error) {
	bin, err := postgresBinDir()
	if err != nil {
		return "", nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	// initdb and postgres refuse to run as root. Run them as the postgres
	// system user directly (setuid in the child, the equivalent of
	// `runuser -u postgres --`) rather than through runuser, so our signals
	// and the parent-death signal reach postgres itself, not a wrapper.
	cred, err := postgresCredential(dir)
	if err != nil {
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initOnce(ctx, bin, dir, data, cred, log); err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		// A throwaway server: durability buys nothing and costs seconds.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGINT is PostgreSQL's "fast shutdown": disconnect clients, stop cleanly.
	p, err := startProcess("postgres", cmd, logWriter{log, "postgres"}, syscall.SIGINT)
	if err != nil {
		return "", nil, err
	}
	stop := func() { p.stop(syscall.SIGINT, 10*time.Second) }
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitFor(ctx, "postgres", 30*time.Second, p, func(ctx context.Context) error { return pingPostgres(ctx, dsn) }); err != nil {
		stop()
		return "", nil, err
	}
	log.Info("postgres: throwaway server ready", "port", port)
	return dsn, stop, nil
}

// initOnce runs initdb unless data already holds a cluster. It initialises
// into a scratch folder renamed into place when complete, so an interrupted
// initdb never leaves a half cluster that a later run would take for a
// whole one.
func initOnce(ctx context.Context, bin, dir, data string, cred *syscall.Credential, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	log.Info("postgres: initialising a throwaway cluster", "dir", data)
	scratch := data + ".initdb"
	_ = os.RemoveAll(scratch)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", scratch, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(scratch)
		return fmt.Errorf("initdb in %s (the postgres user must be able to reach this folder): %w\n%s", dir, err, out)
	}
	_ = os.RemoveAll(data)
	if err := os.Rename(scratch, data); err != nil {
		return fmt.Errorf("placing the new cluster: %w", err)
	}
	return nil
}

// postgresCredential returns the identity to run PostgreSQL as: nil (this
// user) unless we are root, in which case the postgres system user, after
// handing dir over to it.
func postgresCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, &MissingDependencyError{
			What:    "the postgres system user (PostgreSQL refuses to run as root)",
			Install: "apt-get install postgresql",
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return nil, fmt.Errorf("handing %s to the postgres user: %w", dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
