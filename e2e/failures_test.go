package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/excloud/k8sapi/e2e/harness"
)

// A proof runs for many minutes and logs hundreds of lines; a failed
// check's message ends up far above the teardown's lines, and a reader
// who sees only the tail of the output (as CI shows it) sees a FAIL with
// no reason. Every check reports through errorf, errorOf, fatalf and
// fatal, which keep the message, and a run says them all again as the
// last thing its test logs.

var (
	failuresMu sync.Mutex
	failures   = map[string][]string{} // by top-level test name
)

// topLevel is the name of the test t belongs to (a subtest's failure is
// its parent's too).
func topLevel(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

func keepFailure(t testing.TB, msg string) {
	failuresMu.Lock()
	defer failuresMu.Unlock()
	failures[topLevel(t)] = append(failures[topLevel(t)], t.Name()+": "+msg)
}

func errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	keepFailure(t, msg)
	t.Error(msg)
}

func errorOf(t testing.TB, args ...any) {
	t.Helper()
	errorf(t, "%s", sprintln(args...))
}

func fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	keepFailure(t, msg)
	t.Fatal(msg)
}

func fatal(t testing.TB, args ...any) {
	t.Helper()
	fatalf(t, "%s", sprintln(args...))
}

// sprintln formats as t.Error and t.Fatal do.
func sprintln(args ...any) string {
	return strings.TrimSuffix(fmt.Sprintln(args...), "\n")
}

// sayFailuresAgain logs every failure of t's test, once, in the order
// they happened.
func sayFailuresAgain(t testing.TB) {
	failuresMu.Lock()
	said := failures[topLevel(t)]
	delete(failures, topLevel(t))
	failuresMu.Unlock()
	if len(said) > 0 {
		t.Logf("FAILED, %d check(s) (said again here, where the output ends):\n  %s", len(said), strings.Join(said, "\n  "))
	}
}

// newRun is harness.NewRun for this package's proofs, with their
// failures said again after the run's teardown.
func newRun(t *testing.T, tag string) *harness.Run {
	t.Helper()
	t.Cleanup(func() { sayFailuresAgain(t) }) // registered first: runs after the teardown
	return harness.NewRun(t, e2eDir, tag)
}
