package harness

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ConformanceTest is one entry of the suite's own list of [Conformance]
// tests (test/conformance/testdata/conformance.yaml of k8s.io/kubernetes).
type ConformanceTest struct {
	TestName string `json:"testname"`
	CodeName string `json:"codename"` // the spec's full text, as ginkgo reports it
	Release  string `json:"release"`
	File     string `json:"file"`
}

// Serial reports whether the test must run alone (or is slow or
// disruptive): the suite's serial pass runs it, never the parallel one.
func (c ConformanceTest) Serial() bool {
	return strings.Contains(c.CodeName, "[Serial]") || strings.Contains(c.CodeName, "[Disruptive]")
}

// ConformanceList reads the suite's list of [Conformance] tests from the
// k8s.io/kubernetes module components/conformance builds the suite from:
// the one its go.mod pins, or, when modFile is not empty, the one that
// module file pins (another release's suite, as build-components.sh
// builds it with -modfile).
func ConformanceList(componentsDir, modFile string) ([]ConformanceTest, error) {
	dir, err := KubernetesModuleDir(componentsDir, modFile)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "test", "conformance", "testdata", "conformance.yaml"))
	if err != nil {
		return nil, err
	}
	var list []ConformanceTest
	if err := yaml.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("conformance.yaml: %w", err)
	}
	return list, nil
}

// KubernetesModuleDir is the module cache's folder of the k8s.io/kubernetes
// that components/conformance (with modFile, when not empty) pins.
func KubernetesModuleDir(componentsDir, modFile string) (string, error) {
	// `go mod download`, not `go list -m`: on a machine whose module cache
	// is still cold (the components are not built yet), list answers no
	// directory at all.
	args := []string{"mod", "download", "-json"}
	if modFile != "" {
		args = append(args, "-modfile="+modFile)
	}
	cmd := exec.Command("go", append(args, "k8s.io/kubernetes")...)
	cmd.Dir = filepath.Join(componentsDir, "conformance")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("downloading k8s.io/kubernetes for components/conformance (%s): %w: %s", cmp.Or(modFile, "go.mod"), err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download named no directory for k8s.io/kubernetes (%v): %s", err, out)
	}
	return mod.Dir, nil
}

// manifestEntry is one image of the suite's manifest
// (test/utils/image/manifest.go): configs[<ID>] = Config{<registry>, "<name>", "<tag>"}.
var manifestEntry = regexp.MustCompile(`configs\[(\w+)\] = Config\{list\.\w+, "([^"]+)", "([^"]+)"\}`)

// ReadImageManifest reads the images a release's suite names, by the
// manifest's image IDs, each as name:tag, from its k8s.io/kubernetes
// module folder.
func ReadImageManifest(moduleDir string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(moduleDir, "test", "utils", "image", "manifest.go"))
	if err != nil {
		return nil, err
	}
	return parseImageManifest(raw), nil
}

func parseImageManifest(src []byte) map[string]string {
	out := map[string]string{}
	for _, m := range manifestEntry.FindAllSubmatch(src, -1) {
		out[string(m[1])] = string(m[2]) + ":" + string(m[3])
	}
	return out
}

// SubsetGroup is one group of the node proof's conformance subset: why
// it is there, and its tests by their full names.
type SubsetGroup struct {
	Name, Why string
	Tests     []string
}

// ReadSubset reads the subset file: `= <group>: <why>` starts a group,
// every other line that is neither blank nor a # comment is a test's full
// name.
func ReadSubset(path string) ([]SubsetGroup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var groups []SubsetGroup
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "= "):
			name, why, _ := strings.Cut(strings.TrimPrefix(line, "= "), ":")
			groups = append(groups, SubsetGroup{Name: strings.TrimSpace(name), Why: strings.TrimSpace(why)})
		case len(groups) == 0:
			return nil, fmt.Errorf("%s:%d: a test before the first group", path, n)
		default:
			g := &groups[len(groups)-1]
			g.Tests = append(g.Tests, line)
		}
	}
	return groups, sc.Err()
}

// FocusExactly is a ginkgo focus expression that selects the named specs
// (each name ends in [Conformance], so none is a part of another).
func FocusExactly(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(quoted, "|")
}

// SuiteRun is one run of the suite: ginkgo driving e2e.test against a
// cluster, from inside a network namespace that reaches it.
type SuiteRun struct {
	BinDir     string // e2e.test, ginkgo and kubectl
	NS         string // where the run's sockets open (the node network's switch)
	Kubeconfig string
	RepoList   string // the KUBE_TEST_REPO_LIST file
	ReportDir  string // JUnit report and the run's log
	Focus      string // ginkgo --focus
	Skip       string // ginkgo --skip, may be empty
	Procs      int    // parallel processes; 1 runs the specs one after the other
	Timeout    time.Duration
	// Attempts is how many times a failing spec is run before it counts
	// as failed (ginkgo --flake-attempts); 0 or 1 runs each once. A spec
	// that passed only on a later attempt is named by ReadRetried.
	Attempts int
}

// Run runs the suite to its end and returns every spec's result; a
// failing spec is a result, not an error. The run's output is in
// ReportDir/suite.log.
func (s SuiteRun) Run(ctx context.Context) (map[string]SpecResult, error) {
	if err := os.MkdirAll(s.ReportDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(s.ReportDir, "suite.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", s.NS}, s.argv()...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.ReportDir, logf, logf
	cmd.Env = append(os.Environ(), "KUBE_TEST_REPO_LIST="+s.RepoList, "KUBECONFIG="+s.Kubeconfig,
		"PATH="+s.BinDir+":"+os.Getenv("PATH"))
	runErr := cmd.Run()
	results, err := ReadJUnit(s.ReportDir)
	if err != nil {
		return nil, fmt.Errorf("the suite wrote no report (%v): %w; its log: %s", runErr, err, TailFile(logf.Name(), 20))
	}
	return results, nil
}

// argv is ginkgo's command line: its own flags, the suite binary, then
// the suite's flags after "--".
func (s SuiteRun) argv() []string {
	argv := []string{filepath.Join(s.BinDir, "ginkgo"), "--no-color", "--focus=" + s.Focus,
		fmt.Sprintf("--procs=%d", max(s.Procs, 1)), "--timeout=" + s.Timeout.String(), "--poll-progress-after=5m"}
	if s.Skip != "" {
		argv = append(argv, "--skip="+s.Skip)
	}
	if s.Attempts > 1 {
		argv = append(argv, fmt.Sprintf("--flake-attempts=%d", s.Attempts), "--json-report="+retryReport)
	}
	return append(argv, filepath.Join(s.BinDir, "e2e.test"), "--",
		"--provider=skeleton", "--kubeconfig="+s.Kubeconfig, "--report-dir="+s.ReportDir,
		"--disable-log-dump", "--kubectl-path="+filepath.Join(s.BinDir, "kubectl"))
}

// retryReport is ginkgo's JSON report in ReportDir, written when failing
// specs get more than one attempt: the JUnit report does not say how many
// attempts a passed spec took.
const retryReport = "ginkgo-report.json"

// ReadRetried names the specs of the run in dir that passed only on a
// later attempt (their container texts and their own, space-separated;
// compare with Retried). No report (one attempt each): none.
func ReadRetried(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, retryReport))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			State                   string
			NumAttempts             int
		}
	}
	if err := json.Unmarshal(raw, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", retryReport, err)
	}
	var retried []string
	for _, suite := range suites {
		for _, r := range suite.SpecReports {
			if r.State == "passed" && r.NumAttempts > 1 {
				retried = append(retried, strings.Join(append(r.ContainerHierarchyTexts, r.LeafNodeText), " "))
			}
		}
	}
	return retried, nil
}

// Retried is which of names passed only on a later attempt, as ReadRetried
// named them (a name holds every text of its spec, and its labels too).
func Retried(names, retried []string) []string {
	var out []string
	for _, name := range names {
		for _, r := range retried {
			if strings.HasPrefix(name, r) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// SpecResult is how one spec ended, as the JUnit report says.
type SpecResult struct {
	Status  string // passed, failed, skipped, pending, interrupted, timedout, panicked
	Message string // the failure's message, if any
	Seconds float64
}

// junitText is a failure's message: the suite writes no message
// attribute, only the full text.
type junitText struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// summary is the line of the text that says why the spec failed.
func (j *junitText) summary() string {
	if j == nil {
		return ""
	}
	for _, line := range strings.Split(j.Message+"\n"+j.Text, "\n") {
		if strings.Contains(line, "[FAILED]") || strings.Contains(line, "[PANICKED]") || strings.Contains(line, "[TIMEDOUT]") {
			return strings.TrimSpace(line)
		}
	}
	return firstLine(j.Message + "\n" + j.Text)
}

type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Name    string     `xml:"name,attr"`
			Status  string     `xml:"status,attr"`
			Time    float64    `xml:"time,attr"`
			Failure *junitText `xml:"failure"`
			Error   *junitText `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// ReadJUnit reads every junit*.xml in dir into results by spec text
// (ginkgo's "[It] " prefix removed).
func ReadJUnit(dir string) (map[string]SpecResult, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "junit*.xml"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no junit*.xml in %s", dir)
	}
	results := map[string]SpecResult{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc junitSuites
		if err := xml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, s := range doc.Suites {
			for _, c := range s.Cases {
				r := SpecResult{Status: c.Status, Seconds: c.Time, Message: c.Failure.summary()}
				if r.Message == "" {
					r.Message = c.Error.summary()
				}
				results[strings.TrimPrefix(c.Name, "[It] ")] = r
			}
		}
	}
	return results, nil
}

// Tally counts how many of want passed and lists the others with how they
// ended ("did not run" when the report lacks them), in want's order.
func Tally(want []string, results map[string]SpecResult) (passed int, others []string) {
	for _, name := range want {
		r, ok := results[name]
		switch {
		case !ok:
			others = append(others, name+": did not run")
		case r.Status == "passed":
			passed++
		default:
			others = append(others, fmt.Sprintf("%s: %s: %s", name, r.Status, firstLine(r.Message)))
		}
	}
	return passed, others
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// CodeNames lists the tests' full names, optionally only the serial ones
// or only the others.
func CodeNames(tests []ConformanceTest, keep func(ConformanceTest) bool) []string {
	var out []string
	for _, t := range tests {
		if keep == nil || keep(t) {
			out = append(out, t.CodeName)
		}
	}
	slices.Sort(out)
	return out
}
