// Package devtest is test support for the devstack packages, LOCAL ONLY:
// the echo function in testdata/fn (a real lambdaserve bootstrap whose
// routes echo, crash, hang and misbehave on demand), the template that
// routes to it (testdata/template.yaml), and a logger into the test's log.
// It imports nothing of devstack, so every devstack package's tests may
// import it.
package devtest

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// dir is this package's directory: the fixtures are found from it, not
// from the working directory of whichever package's test asks.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// TemplatePath is testdata/template.yaml: EchoFunction, its HttpApi routes
// and a Timeout of 2 s.
func TemplatePath() string { return filepath.Join(dir(), "testdata", "template.yaml") }

// Binary builds testdata/fn once per test binary and returns its path.
func Binary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "k8sapi-fn-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(tmp, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", binaryPath, "./testdata/fn")
		cmd.Dir = dir()
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = errors.New(string(out))
		}
	})
	if binaryErr != nil {
		t.Fatalf("building the test function: %v", binaryErr)
	}
	return binaryPath
}

// Logger logs at debug level into t's log.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Writer writes each Write as one line of t's log: a function's output.
type Writer struct{ T *testing.T }

func (w Writer) Write(b []byte) (int, error) {
	w.T.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
