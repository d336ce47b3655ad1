package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// conformanceRecord is what CONFORMANCE.md says of one run.
type conformanceRecord struct {
	version string // the release whose suite ran
	// upgraded is the upgrade's summary line when the run founded at
	// nodeVersions.Kubernetes and upgraded before the suite (upgrade
	// mode), empty otherwise.
	upgraded                string
	total, selected, passed int
	procs                   int
	started                 time.Time
	wall                    time.Duration
	passes, others          []string
	results                 map[string]harness.SpecResult
}

// upgradeHeading starts CONFORMANCE.md's section of the upgrade mode; the
// file's part before it is the founding release's run. Each mode rewrites
// its own part and keeps the other's.
const upgradeHeading = "## After an upgrade\n"

// write writes the record into its part of the file at path, keeping the
// other part, and returns the tests that did not pass for no known
// property of the sandbox.
func (r conformanceRecord) write(t *testing.T, path string) []string {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fatal(t, err)
	}
	founding, upgrade := splitRecord(string(old))
	part, unexplained := r.render()
	if r.upgraded == "" {
		founding = part
	} else {
		upgrade = part
	}
	if err := os.WriteFile(path, []byte(founding+"\n"+upgrade), 0o644); err != nil {
		fatal(t, err)
	}
	return unexplained
}

// splitRecord cuts CONFORMANCE.md into its two parts, each standing in
// for itself when missing (a mode that never ran says so).
func splitRecord(file string) (founding, upgrade string) {
	founding, upgrade, found := strings.Cut(file, upgradeHeading)
	if !found {
		upgrade = upgradeHeading + "\n" + upgradeIntro() + "\n\nNot run yet.\n"
	} else {
		upgrade = upgradeHeading + upgrade
	}
	if strings.TrimSpace(founding) == "" {
		founding = "# Conformance\n\n`make conformance` has not run yet.\n"
	}
	return strings.TrimRight(founding, "\n") + "\n", upgrade
}

// upgradeIntro says what the upgrade mode runs.
func upgradeIntro() string {
	return fmt.Sprintf("`make conformance CONFORMANCE_UPGRADE=1` founds the cluster at %s as `make conformance` does, adds the node "+
		"proof's pool of two workers, moves control plane and workers to %s with the node proof's rolling upgrade (`POST "+
		"/clusters/{id}/upgrade` under its API and workload probes, the same checks after), deletes the pool, and runs the "+
		"`[Conformance]` tests of %s's own suite (e2e.test built from k8s.io/kubernetes %s, the images its manifest names) "+
		"on the three upgraded control-plane nodes. See e2e/README.md.",
		nodeVersions.Kubernetes, upgradeRelease.Kubernetes, upgradeRelease.Kubernetes, upgradeRelease.Kubernetes)
}

// render is the record's part of CONFORMANCE.md and the tests that did
// not pass for no known property of the sandbox.
func (r conformanceRecord) render() (string, []string) {
	var b strings.Builder
	date := r.started.UTC().Format("2006-01-02")
	tableHeading := "## Tests that did not pass"
	if r.upgraded == "" {
		fmt.Fprintf(&b, "# Conformance\n\n`make conformance` on %s: **conformance: %d/%d passed** (Kubernetes %s).\n\n",
			date, r.passed, r.total, r.version)
	} else {
		fmt.Fprintf(&b, "%s\n%s\n\n`make conformance CONFORMANCE_UPGRADE=1` on %s: **conformance after upgrade: %d/%d passed** (founded at %s, the suite of %s).\n\n- Upgrade: %s.\n",
			upgradeHeading, upgradeIntro(), date, r.passed, r.total, nodeVersions.Kubernetes, r.version, r.upgraded)
		tableHeading = "### Tests that did not pass after the upgrade"
	}
	fmt.Fprintf(&b, "- Selected: %d of the %d `[Conformance]` tests of %s", r.selected, r.total, r.version)
	if f := os.Getenv("CONFORMANCE_FOCUS"); f != "" {
		fmt.Fprintf(&b, " (CONFORMANCE_FOCUS=`%s`)", f)
	}
	fmt.Fprintf(&b, ".\n- Machine: %s.\n- Wall time of the suite: %s (%s; %d specs at once in the parallel pass).\n",
		machineFacts(), r.wall.Round(time.Second), strings.Join(r.passes, ", "), r.procs)
	b.WriteString("- Cluster: founded through `POST /clusters` and booted exactly as the node proof's (three control-plane nodes, flannel CNI, systemd machines; e2e/README.md).\n")
	b.WriteString("- Reports: the JUnit report and the suite's log of each pass stay in `e2e/.logs/<run>/conformance-<pass>/` on the machine that ran it.\n\n")
	var unexplained []string
	if len(r.others) == 0 {
		b.WriteString("Every selected test passed.\n")
	} else {
		b.WriteString(tableHeading + "\n\n| test | how it ended | cause | evidence |\n| --- | --- | --- | --- |\n")
	}
	for _, line := range r.others {
		name, _, _ := strings.Cut(line, ": ")
		res, ran := r.results[name]
		status, evidence := "did not run", "not in the JUnit report"
		if ran {
			status, evidence = res.Status, res.Message
		}
		cause, known := sandboxCause(name)
		if !known {
			unexplained = append(unexplained, line)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCell(name), status, mdCell(cause), mdCell(evidence))
	}
	return b.String(), unexplained
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`), "\n", " ")
}

// machineFacts names the machine: cores, memory, kernel, cgroup version.
func machineFacts() string {
	cgroup := "cgroup v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cgroup = "cgroup v2"
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d cores, %s memory, Linux %s, %s", runtime.NumCPU(), memTotal(), strings.TrimSpace(string(kernel)), cgroup)
}

// memTotal is the machine's memory as /proc/meminfo says it.
func memTotal() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	var kb int
	for _, line := range strings.Split(string(raw), "\n") {
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

// sandboxProperties are the tests that cannot pass on these machines for a
// property of the sandbox that a real VM does not have, each with that
// property. A test may be here only with the evidence that names the
// property in CONFORMANCE.md; never for something k8sapi renders.
var sandboxProperties = map[string]string{}

// sandboxCause is why a test cannot pass here, if it is a known property
// of the sandbox.
func sandboxCause(name string) (string, bool) {
	cause, ok := sandboxProperties[name]
	if !ok {
		return "not explained: a defect until shown otherwise", false
	}
	return cause, true
}

// TestConformanceRecordKeepsTheOtherModesPart: each mode rewrites its own
// part of CONFORMANCE.md and keeps the other's, and a mode that never ran
// says so.
func TestConformanceRecordKeepsTheOtherModesPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "CONFORMANCE.md")
	founding := conformanceRecord{version: nodeVersions.Kubernetes, total: 441, selected: 441, passed: 441, procs: 4}
	upgraded := conformanceRecord{version: upgradeRelease.Kubernetes, upgraded: "upgraded v1.35.4 → v1.36.3: 3/3 control-plane",
		total: 446, selected: 2, passed: 1, procs: 4, others: []string{"[sig-x] y [Conformance]: failed: boom"},
		results: map[string]harness.SpecResult{"[sig-x] y [Conformance]": {Status: "failed", Message: "boom"}}}
	founding.write(t, path)
	if got := readFile(t, path); !strings.Contains(got, "**conformance: 441/441 passed**") || !strings.Contains(got, upgradeHeading+"\n"+upgradeIntro()+"\n\nNot run yet.\n") {
		t.Fatalf("the founding record alone:\n%s", got)
	}
	if unexplained := upgraded.write(t, path); len(unexplained) != 1 {
		t.Errorf("unexplained %v, want the one failed test", unexplained)
	}
	got := readFile(t, path)
	if !strings.Contains(got, "**conformance: 441/441 passed**") || !strings.Contains(got, "**conformance after upgrade: 1/446 passed**") ||
		strings.Contains(got, "Not run yet") || !strings.Contains(got, "- Upgrade: upgraded v1.35.4 → v1.36.3: 3/3 control-plane.\n") ||
		!strings.Contains(got, "### Tests that did not pass after the upgrade") || strings.Count(got, upgradeHeading) != 1 {
		t.Fatalf("after the upgrade mode:\n%s", got)
	}
	founding.passed = 440
	founding.write(t, path)
	if again := readFile(t, path); !strings.Contains(again, "**conformance: 440/441 passed**") || !strings.Contains(again, "**conformance after upgrade: 1/446 passed**") {
		t.Fatalf("the founding record again:\n%s", again)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
