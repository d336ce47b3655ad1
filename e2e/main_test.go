// Package e2e is the end-to-end proof: the bundles k8sapi renders boot a
// real three-node control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler), each node a network namespace of
// its own. See README.md.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

var (
	e2eDir  string // this module's folder
	binDir  string // built components
	skipWhy string // set when the proof cannot run here
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e2eDir = wd
	binDir = filepath.Join(e2eDir, ".work", "bin")
	if os.Geteuid() != 0 {
		// Network namespaces need root; CI runs as root.
		skipWhy = "the end-to-end proof needs root (network namespaces)"
		return m.Run()
	}
	if removed, err := harness.CleanStale(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cleaning stale namespaces: %v\n", err)
	} else if len(removed) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: removed stale namespaces %v\n", removed)
	}
	return m.Run()
}

// requireRoot fails with one line where the proof cannot run (make test
// must prove it, so it never skips) and builds the control-plane
// components (once per test binary) where it can.
func requireRoot(t *testing.T) {
	t.Helper()
	if skipWhy != "" {
		fatalf(t, "e2e: %s", skipWhy)
	}
	requireComponents(t, "control-plane")
}

var (
	buildMu   sync.Mutex
	builtSets = map[string]error{}
)

// requireComponents runs build-components.sh for a set (control-plane or
// nodes) once per test binary; a failed build fails every test needing it.
func requireComponents(t *testing.T, set string) {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	err, done := builtSets[set]
	if !done {
		start := time.Now()
		build := exec.Command("bash", filepath.Join(e2eDir, "build-components.sh"), set)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "E2E_BIN_DIR="+binDir)
		err = build.Run()
		builtSets[set] = err
		fmt.Fprintf(os.Stderr, "e2e: %s components ready in %s\n", set, time.Since(start).Round(time.Second))
	}
	if err != nil {
		fatalf(t, "e2e: building the %s components: %v", set, err)
	}
}

// bin returns the built binary for a rendered program name.
func bin(program string) string {
	return filepath.Join(binDir, filepath.Base(program))
}
