package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// bringUpOnly: E2E_BRINGUP_ONLY=1 ends the node proof once workloads are
// reachable (no renewal, reboot or conformance subset), so `make
// bench-bringup` can time several bring-ups in the time of one proof.
func bringUpOnly() bool { return os.Getenv("E2E_BRINGUP_ONLY") == "1" }

// timelineRecord is one proof run's timeline as `make bench-bringup`
// collects it (E2E_TIMELINE_OUT names the file): each phase's seconds
// after POST /clusters, the set-up excluded, in the order reached.
type timelineRecord struct {
	Date         time.Time      `json:"date"`
	SetUpSeconds float64        `json:"set_up_seconds"`
	Phases       []phaseSeconds `json:"phases"`
	// Operations are the operations on the live cluster the run timed, in
	// the order done (make bench-lifecycle reads them).
	Operations []phaseSeconds `json:"operations,omitempty"`
}

type phaseSeconds struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// finish prints the timeline and, when asked, writes it for the bench.
func (tl *timeline) finish(t *testing.T) {
	tl.report(t)
	out := os.Getenv("E2E_TIMELINE_OUT")
	if out == "" {
		return
	}
	rec := timelineRecord{Date: time.Now().UTC(), SetUpSeconds: tl.setUp.Seconds(), Operations: tl.operations}
	for _, p := range tl.phases {
		rec.Phases = append(rec.Phases, phaseSeconds{p, tl.times[p].Seconds()})
	}
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(out), 0o755)
	}
	if err == nil {
		err = os.WriteFile(out, raw, 0o644)
	}
	if err != nil {
		errorf(t, "writing the timeline to %s: %v", out, err)
	}
}

// took records how long an operation on the live cluster took (a scaling,
// a remediation, a rotation), for make bench-lifecycle; its name matches
// the bench's table of goals (cmd/k8sapi-bench/lifecycle.go).
func (tl *timeline) took(operation string, d time.Duration) {
	tl.operations = append(tl.operations, phaseSeconds{operation, d.Seconds()})
}
