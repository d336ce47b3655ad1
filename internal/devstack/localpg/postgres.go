package localpg

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

	"github.com/excloud/k8sapi/internal/devstack/proc"
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
		if proc.IsExecutable(filepath.Join(dir, "initdb")) && proc.IsExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", &proc.MissingDependencyError{
		What:    "PostgreSQL server binaries (initdb, postgres) and no server answers at DATABASE_URL or 127.0.0.1:5432",
		Install: "apt-get install postgresql",
	}
}

// pgMajor extracts 15 from /usr/lib/postgresql/15/bin (0 if not a number).
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// startThrowawayPostgres runs initdb (once) and postgres under dir, on a
// free loopback port, with trust auth for user postgres.
func startThrowawayPostgres(ctx context.Context, dir string, log *slog.Logger) (string, func(), error) {
	bin, dir, cred, err := serverDir(dir)
	if err != nil {
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initOnce(ctx, bin, dir, data, cred, log); err != nil {
		return "", nil, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return "", nil, err
	}
	p, err := startServer(ctx, bin, dir, port, cred, log)
	if err != nil {
		return "", nil, err
	}
	stop := func() { p.Stop(syscall.SIGINT, 10*time.Second) }
	dsn := localDSN(port)
	log.Info("postgres: throwaway server ready", "port", port)
	return dsn, stop, nil
}

// serverDir readies dir for a server of this package's own: the server
// binaries, dir made absolute and created, and the identity to run them as.
// initdb and postgres refuse to run as root. Run them as the postgres
// system user directly (setuid in the child, the equivalent of
// `runuser -u postgres --`) rather than through runuser, so our signals
// and the parent-death signal reach postgres itself, not a wrapper.
func serverDir(dir string) (bin, abs string, cred *syscall.Credential, err error) {
	if bin, err = postgresBinDir(); err != nil {
		return "", "", nil, err
	}
	if abs, err = filepath.Abs(dir); err != nil {
		return "", "", nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", "", nil, fmt.Errorf("creating %s: %w", abs, err)
	}
	if cred, err = postgresCredential(abs); err != nil {
		return "", "", nil, err
	}
	return bin, abs, cred, nil
}

// initdb initialises a cluster in data owned by user postgres, trusting
// its local clients. The parent-death signal: an initdb left running would
// hold the folder a later start initialises again.
func initdb(ctx context.Context, bin, data string, cred *syscall.Credential) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startServer starts postgres on the cluster in dir/data, on 127.0.0.1:port
// and a socket in dir, and waits until it answers. A server that does not
// answer is shut down again.
func startServer(ctx context.Context, bin, dir string, port int, cred *syscall.Credential, log *slog.Logger) (*proc.Process, error) {
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		// A throwaway server: durability buys nothing and costs seconds.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGINT is PostgreSQL's "fast shutdown": disconnect clients, stop cleanly.
	p, err := proc.Start("postgres", cmd, proc.LogWriter{Log: log, Name: "postgres"}, syscall.SIGINT)
	if err != nil {
		return nil, err
	}
	dsn := localDSN(port)
	if err := proc.WaitFor(ctx, "postgres", 30*time.Second, p, func(ctx context.Context) error { return pingPostgres(ctx, dsn) }); err != nil {
		p.Stop(syscall.SIGINT, 10*time.Second)
		return nil, err
	}
	return p, nil
}

// localDSN is the postgres database of a server this package started on
// port: user postgres, trust auth, no TLS.
func localDSN(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
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
	if out, err := initdb(ctx, bin, scratch, cred).CombinedOutput(); err != nil {
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
		return nil, &proc.MissingDependencyError{
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
