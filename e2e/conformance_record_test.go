package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// conformanceRecord is what CONFORMANCE.md says of one run.
type conformanceRecord struct {
	version                 string
	total, selected, passed int
	procs                   int
	started                 time.Time
	wall                    time.Duration
	passes, others          []string
	results                 map[string]harness.SpecResult
}

// write writes the record to path and returns the tests that did not
// pass for no known property of the sandbox.
func (r conformanceRecord) write(t *testing.T, path string) []string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance\n\n`make conformance` on %s: **conformance: %d/%d passed** (Kubernetes %s).\n\n",
		r.started.UTC().Format("2006-01-02"), r.passed, r.total, r.version)
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
		b.WriteString("## Tests that did not pass\n\n| test | how it ended | cause | evidence |\n| --- | --- | --- | --- |\n")
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
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fatal(t, err)
	}
	return unexplained
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
