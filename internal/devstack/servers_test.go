package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// The throwaway path, forced: initdb and postgres as the postgres user in a
// folder handed to it, a free port, and stop leaves no process behind.
func TestThrowawayPostgres(t *testing.T) {
	if _, err := postgresBinDir(); err != nil {
		t.Fatalf("this machine should have PostgreSQL binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "k8sapi-pgtest-") // not t.TempDir: its parent is closed to other users
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	dsn, stop, err := startThrowawayPostgres(ctx, dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if strings.Contains(dsn, ":5432/") {
		t.Fatalf("dsn %s: expected a free port, not the default", dsn)
	}
	name := UniqueDatabaseName("throwaway")
	db, err := CreateDatabase(ctx, dsn, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyMigrations(ctx, db, false); err != nil {
		t.Fatal(err)
	}
	// Idempotent: a second run applies nothing and fails nothing.
	if err := ApplyMigrations(ctx, db, true); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := pingPostgres(ctx, dsn); err == nil {
		t.Fatal("postgres still answers after stop")
	}
	stop() // safe twice
}

func TestStartMotoStartsAndStops(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "") // force a fresh server
	ctx := context.Background()
	endpoint, stop, err := StartMoto(ctx, "", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := AWSConfig(endpoint)
	id1, err := CreateKMSKey(ctx, cfg, LocalKeyAlias)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := CreateKMSKey(ctx, cfg, LocalKeyAlias)
	if err != nil || id1 != id2 {
		t.Fatalf("the alias should be reused: %s then %s (%v)", id1, id2, err)
	}
	secret := DBSecret{Username: "u", Host: "127.0.0.1", Port: 5432, DBName: "d", Engine: "postgres"}
	arn1, err := PutDBSecret(ctx, cfg, "k8sapi/test", secret)
	if err != nil {
		t.Fatal(err)
	}
	arn2, err := PutDBSecret(ctx, cfg, "k8sapi/test", secret)
	if err != nil || arn1 != arn2 || !strings.HasPrefix(arn1, "arn:aws:secretsmanager:") {
		t.Fatalf("secret ARNs %s, %s (%v)", arn1, arn2, err)
	}
	stop()
	if err := httpAnswers(ctx, endpoint); err == nil {
		t.Fatal("moto still answers after stop")
	}
}

func TestMissingMoto(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("PATH", t.TempDir())
	_, _, err := StartMoto(context.Background(), "", testLogger(t))
	want := "missing dependency: moto_server (local KMS, Secrets Manager and S3) not found; install it with: pip install 'moto[server]'"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

// stop kills the whole process group, grandchildren included.
func TestProcessStopKillsTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out := &stacktest.LockedBuffer{}
	p, err := startProcess("sh", cmd, out, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var child int
	if _, err := fmt.Sscan(out.String(), &child); err != nil || child == 0 {
		t.Fatalf("no child pid in %q", out.String())
	}
	p.stop(syscall.SIGTERM, time.Second)
	time.Sleep(50 * time.Millisecond)
	if alive(child) {
		t.Fatalf("grandchild %d survived", child)
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
