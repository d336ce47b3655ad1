package faultinjection

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/excloud/k8sapi/internal/devstack/localpg"
)

// pg is this package's own PostgreSQL server: tests stop and start it.
var pg *localpg.PostgresServer

// scratch is a directory of this test binary's own, removed when it ends
// (the server's data, the function binaries).
var scratch string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "k8sapi-faults-pg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	scratch = dir
	pg, err = localpg.StartPostgresServer(context.Background(), dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultinjection: postgres:", err)
		return 1
	}
	defer pg.Stop()
	return m.Run()
}
