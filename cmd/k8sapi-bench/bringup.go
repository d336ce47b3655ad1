package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The node proof's bring-up, timed over several runs by `make
// bench-bringup` (E2E_BRINGUP_ONLY=1: founding to workloads reachable),
// each run's timeline a JSON file the proof wrote (E2E_TIMELINE_OUT). The
// medians go into a marked block of the kept section, the rest of which
// stays as written.
const (
	bringUpBegin = "<!-- bench-bringup: written by make bench-bringup -->"
	bringUpEnd   = "<!-- /bench-bringup -->"
)

const minute = "2006-01-02 15:04 UTC"

// bringUpRun is one run's timeline, as e2e/timeline_out_test.go writes it.
type bringUpRun struct {
	Date         time.Time   `json:"date"`
	SetUpSeconds float64     `json:"set_up_seconds"`
	Phases       []phaseTime `json:"phases"`
	// Operations are the operations on the live cluster the run timed
	// (make bench-lifecycle, lifecycle.go).
	Operations []phaseTime `json:"operations"`
}

type phaseTime struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// readBringUps reads every run in dir, oldest first (the files' names).
func readBringUps(dir string) ([]bringUpRun, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no timelines in %s (%v)", dir, err)
	}
	slices.Sort(files)
	runs := make([]bringUpRun, len(files))
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(raw, &runs[i])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return runs, nil
}

// seconds is each phase's time in every run, by phase; a phase missing
// from a run is left out (every run reaches the same phases when it passes).
func seconds(runs []bringUpRun) map[string][]float64 {
	by := map[string][]float64{}
	for _, r := range runs {
		for _, p := range r.Phases {
			by[p.Phase] = append(by[p.Phase], p.Seconds)
		}
	}
	for phase, s := range by {
		if len(s) != len(runs) {
			delete(by, phase)
		}
	}
	return by
}

// bringUpBlock is the marked block: one row per phase by its median, each
// run's figure beside it.
func bringUpBlock(runs []bringUpRun) string {
	by := seconds(runs)
	phases := slices.SortedFunc(func(yield func(string) bool) {
		for p := range by {
			if !yield(p) {
				return
			}
		}
	}, func(a, b string) int { return cmp.Or(cmp.Compare(median(by[a]), median(by[b])), strings.Compare(a, b)) })
	var b strings.Builder
	setUp := make([]float64, len(runs))
	for i, r := range runs {
		setUp[i] = r.SetUpSeconds
	}
	fmt.Fprintf(&b, "%s\nMedian of %d bring-ups (`make bench-bringup`, %s to %s), seconds after POST /clusters with the proof's set-up (median %.1f s) excluded:\n\n",
		bringUpBegin, len(runs), runs[0].Date.Format(minute), runs[len(runs)-1].Date.Format(minute), median(setUp))
	b.WriteString("| phase | median |" + strings.Repeat(" run |", len(runs)) + "\n|---|---|" + strings.Repeat("---|", len(runs)) + "\n")
	for _, p := range phases {
		fmt.Fprintf(&b, "| %s | %.1f s |", p, median(by[p]))
		for _, s := range by[p] {
			fmt.Fprintf(&b, " %.1f |", s)
		}
		b.WriteString("\n")
	}
	return b.String() + bringUpEnd
}

// withBlock is report with block (marked by begin and end) put in place
// of its old one, or at the end of the kept section when it has none.
func withBlock(report, block, begin, end string) (string, error) {
	if i, j := strings.Index(report, begin), strings.Index(report, end); i >= 0 && j > i {
		return report[:i] + block + report[j+len(end):], nil
	}
	k := strings.Index(report, keptHeading)
	if k < 0 {
		return "", fmt.Errorf("no %q section to put the block in", keptHeading)
	}
	stop := len(report)
	if j := strings.Index(report[k+len(keptHeading):], "\n## "); j >= 0 {
		stop = k + len(keptHeading) + j
	}
	return strings.TrimRight(report[:stop], "\n") + "\n\n" + block + "\n" + report[stop:], nil
}

// writeBringUp reads the runs in dir, prints the block and writes it into
// the report.
func writeBringUp(dir, out string) error {
	runs, err := readBringUps(dir)
	if err != nil {
		return err
	}
	return writeBlock(out, bringUpBlock(runs), bringUpBegin, bringUpEnd)
}

// writeBlock prints block and writes it into the report at out.
func writeBlock(out, block, begin, end string) error {
	fmt.Println(block)
	old, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	report, err := withBlock(string(old), block, begin, end)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(report), 0o644)
}
