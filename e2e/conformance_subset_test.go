package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// subsetFile is the conformance subset the node proof runs: one file, a
// line of why for each group.
const subsetFile = "conformance-subset.txt"

// minSubset is the least number of tests the subset may hold.
const minSubset = 120

// suiteProcs is how many specs the suite runs at once (E2E_CONFORMANCE_PROCS
// overrides): most specs wait on pods, so more than the two cores.
func suiteProcs() int {
	if n, err := strconv.Atoi(os.Getenv("E2E_CONFORMANCE_PROCS")); err == nil && n > 0 {
		return n
	}
	return 4
}

// subsetAttempts is how many times the subset runs a failing test. On
// this 2-core sandbox a test fails now and then for the machine, never for
// the cluster (runc's cgroup v1 freezer gives up under load: "unable to
// freeze"); a second attempt tells those apart from a real failure, which
// fails both, and the summary names every test that needed one.
const subsetAttempts = 2

// retriedSpecs names the tests of names that passed only on a second
// attempt in the run reported in dir.
func retriedSpecs(t *testing.T, dir string, names []string) []string {
	t.Helper()
	retried, err := harness.ReadRetried(dir)
	if err != nil {
		fatal(t, err)
	}
	return harness.Retried(names, retried)
}

// checkConformanceSubset runs the subset on the proven cluster and fails
// the test on any test of it that did not pass.
func (c *machineCluster) checkConformanceSubset(t *testing.T, p *provenCluster, tl *timeline) string {
	t.Helper()
	names := subsetNames(t)
	run := p.suiteRun(t, suiteOf(t, nodeVersions.Kubernetes), "subset", harness.FocusExactly(names), "", 30*time.Minute)
	run.Attempts = subsetAttempts
	start := time.Now()
	results, err := run.Run(context.Background())
	if err != nil {
		fatalf(t, "conformance subset: %v", err)
	}
	passed, others := harness.Tally(names, results)
	tl.mark("conformance subset done")
	line := fmt.Sprintf("conformance: %d/%d passed", passed, len(names))
	if retried := retriedSpecs(t, run.ReportDir, names); len(retried) > 0 {
		line += fmt.Sprintf(" (%d on a second attempt: %s)", len(retried), strings.Join(retried, "; "))
	}
	t.Logf("%s (the subset, %s, %d at once; report in %s)", line, time.Since(start).Round(time.Second), run.Procs, run.ReportDir)
	if len(others) > 0 {
		errorf(t, "conformance subset: %d did not pass:\n%s", len(others), strings.Join(others, "\n"))
	}
	return line
}

// subsetNames lists the subset's tests in the file's order.
func subsetNames(t *testing.T) []string {
	t.Helper()
	groups, err := harness.ReadSubset(filepath.Join(e2eDir, subsetFile))
	if err != nil {
		fatal(t, err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Tests...)
	}
	return names
}

// suiteRun is a run of suite against the proven cluster from the node
// network's switch, as an admin of the initial node, with every image
// from the proof's registry and the platform's DNS records in the
// resolver; its report goes to the run's log folder.
func (p *provenCluster) suiteRun(t *testing.T, suite conformanceSuite, name, focus, skip string, timeout time.Duration) harness.SuiteRun {
	t.Helper()
	writePlatformHosts(t, p.st, p.svc.resolverHosts) // the records as they are now that every node is up
	dir := filepath.Join(p.r.LogDir, "conformance-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(t, err)
	}
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	repoList := filepath.Join(dir, "repo-list.yaml")
	for path, content := range map[string][]byte{kubeconfig: p.suiteKubeconfig(t), repoList: harness.TestRepoList(svcAddr(registryPort))} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			fatal(t, err)
		}
	}
	return harness.SuiteRun{BinDir: suite.binDir(), NS: p.network.Switch, Kubeconfig: kubeconfig, RepoList: repoList,
		ReportDir: dir, Focus: focus, Skip: skip, Procs: suiteProcs(), Timeout: timeout}
}

// suiteKubeconfig is the admin kubeconfig the suite runs with. On a
// cluster as founded: the initial node's bootstrap identity, which names
// that node's address. Once the proof works as an operator (after an
// upgrade no node holds the bootstrap identity any more): a kubeconfig
// k8sapi issues now (its TTL counts from the pass's start), its server,
// the control-plane name, set to the initial node's address: the suite
// runs on the switch, whose resolver is the host's.
func (p *provenCluster) suiteKubeconfig(t *testing.T) []byte {
	t.Helper()
	if p.c.kubeconfig == "" {
		raw, err := os.ReadFile(filepath.Join(p.c.initial().Root, adminKubeconfig))
		if err != nil {
			fatalf(t, "reading the initial node's admin kubeconfig: %v", err)
		}
		return raw
	}
	raw := p.useOperatorKubeconfig(t)
	byName := []byte("https://" + p.cl.ControlPlaneDNSName + ":6443")
	if !bytes.Contains(raw, byName) {
		fatalf(t, "the operator's kubeconfig names no server %s", byName)
	}
	return bytes.ReplaceAll(raw, byName, []byte("https://"+p.c.vms[0].addr.Addr().String()+":6443"))
}

// TestConformanceSubsetIsSound checks the subset file against the suite
// the cluster's version ships: every line names one of its [Conformance]
// tests, none twice, none that must run alone, every group says why, and
// there are at least minSubset of them, none [Slow].
func TestConformanceSubsetIsSound(t *testing.T) {
	list := suiteOf(t, nodeVersions.Kubernetes).list(t)
	known := map[string]harness.ConformanceTest{}
	for _, ct := range list {
		known[ct.CodeName] = ct
	}
	groups, err := harness.ReadSubset(filepath.Join(e2eDir, subsetFile))
	if err != nil {
		fatal(t, err)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		if g.Why == "" || len(g.Tests) == 0 {
			errorf(t, "group %q: needs a reason and at least one test", g.Name)
		}
		for _, name := range g.Tests {
			ct, ok := known[name]
			switch {
			case !ok:
				errorf(t, "group %q: %q is not a [Conformance] test of the suite", g.Name, name)
			case ct.Serial():
				errorf(t, "group %q: %q must run alone; the subset runs in parallel", g.Name, name)
			case strings.Contains(name, "[Slow]"):
				errorf(t, "group %q: %q is [Slow]; make conformance runs it", g.Name, name)
			case seen[name]:
				errorf(t, "group %q: %q is listed twice", g.Name, name)
			}
			seen[name] = true
		}
	}
	if len(seen) < minSubset {
		errorf(t, "the subset holds %d tests; at least %d", len(seen), minSubset)
	}
}
