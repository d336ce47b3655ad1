//go:build conformance

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// conformanceUpgradeEnv turns on the upgrade mode when "1" (make
// conformance CONFORMANCE_UPGRADE=1): found at nodeVersions.Kubernetes,
// upgrade to upgradeRelease.Kubernetes, run that release's suite.
const conformanceUpgradeEnv = "CONFORMANCE_UPGRADE"

// TestConformance is `make conformance`: a cluster founded and booted
// exactly as the node proof's (normal certificate lifetimes), then every
// [Conformance] test of the suite at the cluster's version: a parallel
// pass of those that may share the cluster, then a serial pass of the
// rest. It writes CONFORMANCE.md at the repository's root and fails
// unless every test that did not pass is a known property of this
// sandbox (sandboxProperties). CONFORMANCE_FOCUS, a regular expression,
// narrows the run to the tests whose names match it; CONFORMANCE_SUBSET=1
// to the node proof's subset. In the upgrade mode the cluster is upgraded
// first (upgradeBeforeSuite) and the suite is the upgrade release's; the
// record goes to CONFORMANCE.md's upgrade section.
func TestConformance(t *testing.T) {
	upgrading := os.Getenv(conformanceUpgradeEnv) == "1"
	suite, tag := suiteOf(t, nodeVersions.Kubernetes), "conformance"
	if upgrading {
		requireComponents(t, "conformance-upgrade")
		suite, tag = suiteOf(t, upgradeRelease.Kubernetes), "conformance-upgrade"
	}
	list := suite.list(t)
	selected := selectTests(t, list)
	p := bringUpCluster(t, tag, nil)
	p.c.checkNodesReady(t, p.vms, p.tl)
	p.c.checkAddonsReady(t)
	rec := conformanceRecord{version: suite.release, total: len(list), selected: len(selected), procs: suiteProcs()}
	if upgrading {
		rec.upgraded = p.upgradeBeforeSuite(t, suite)
	}
	p.tl.mark("cluster ready for the suite")
	rec.started = time.Now()
	results := map[string]harness.SpecResult{}
	for _, pass := range []struct {
		name   string
		serial bool
	}{{"parallel", false}, {"serial", true}} {
		names := harness.CodeNames(selected, func(c harness.ConformanceTest) bool { return c.Serial() == pass.serial })
		rec.passes = append(rec.passes, p.runPass(t, suite, pass.name, names, pass.serial, results))
	}
	rec.passed, rec.others = harness.Tally(harness.CodeNames(selected, nil), results)
	rec.results, rec.wall = results, time.Since(rec.started)
	path := filepath.Join(repoRoot(), "CONFORMANCE.md")
	unexplained := rec.write(t, path)
	line := "conformance"
	if upgrading {
		line = "conformance after upgrade"
	}
	t.Logf("%s: %d/%d passed (the suite of %s, %d selected; %s; %s)", line, rec.passed, rec.total, suite.release, rec.selected,
		strings.Join(rec.passes, ", "), path)
	if len(unexplained) > 0 {
		errorf(t, "%d tests did not pass for no known property of this sandbox:\n%s", len(unexplained), strings.Join(unexplained, "\n"))
	}
}

// upgradeBeforeSuite moves the cluster to the upgrade's release as the
// node proof's pool step does: a pool of two workers running pool-web,
// then the proof's own upgrade with its probes and its checks after
// (nodes_upgrade_test.go); then the pool goes (its workers drained, the
// control plane untainted) so that suite judges three control-plane
// nodes, as it judges a cluster as founded, and the registry gets the
// images suite names. It answers the upgrade's summary line.
func (p *provenCluster) upgradeBeforeSuite(t *testing.T, suite conformanceSuite) string {
	t.Helper()
	// As the node proof's steps begin: the probe pods Ready and the
	// workloads reachable (pool-web's check reaches it from a probe pod).
	p.c.checkWorkloads(t, p.svc, p.tl)
	workers := p.startPool(t)
	p.eventuallyTainted(t, true)
	p.checkPoolWeb(t)
	workers, summary := p.upgrade(t, workers)
	p.endPool(t, workers)
	for _, kind := range []string{"deployment", "service"} { // pool-web would wait for workers that are gone
		p.deleteInCluster(t, kind, "pool-web")
	}
	pushToRegistry(t, p.r, p.network.Switch, suite.testImages(t, testImageRoots(t)))
	p.tl.mark("upgraded for the suite")
	return summary
}

// selectTests is the suite's list, narrowed by CONFORMANCE_FOCUS (or, with
// CONFORMANCE_SUBSET=1, to the node proof's subset).
func selectTests(t *testing.T, list []harness.ConformanceTest) []harness.ConformanceTest {
	focus := os.Getenv("CONFORMANCE_FOCUS")
	if os.Getenv("CONFORMANCE_SUBSET") == "1" {
		focus = harness.FocusExactly(subsetNames(t))
	}
	if focus == "" {
		return list
	}
	re, err := regexp.Compile(focus)
	if err != nil {
		fatalf(t, "CONFORMANCE_FOCUS: %v", err)
	}
	var out []harness.ConformanceTest
	for _, c := range list {
		if re.MatchString(c.CodeName) {
			out = append(out, c)
		}
	}
	return out
}

// runPass runs one pass of suite over names (one spec at a time when serial),
// adds its results and says how long it took.
func (p *provenCluster) runPass(t *testing.T, suite conformanceSuite, name string, names []string, serial bool, results map[string]harness.SpecResult) string {
	t.Helper()
	if len(names) == 0 {
		return name + " pass: nothing selected"
	}
	run := p.suiteRun(t, suite, name, harness.FocusExactly(names), "", 4*time.Hour)
	if serial {
		run.Procs = 1
	}
	start := time.Now()
	got, err := run.Run(context.Background())
	if err != nil {
		fatalf(t, "the %s pass: %v", name, err)
	}
	// Each pass's report lists every spec of the suite, the other pass's
	// as skipped: keep only this pass's own.
	for _, n := range names {
		if r, ok := got[n]; ok {
			results[n] = r
		}
	}
	passed, _ := harness.Tally(names, got)
	took := time.Since(start).Round(time.Second)
	t.Logf("%s pass: %d/%d passed in %s (%d at once; report in %s)", name, passed, len(names), took, run.Procs, run.ReportDir)
	return fmt.Sprintf("%s pass %d/%d in %s", name, passed, len(names), took)
}
