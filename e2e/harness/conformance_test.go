package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestReadSubsetGroupsTestsUnderTheirReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subset.txt")
	body := "# a comment\n\n= node: the kubelet\n[sig-node] A [Conformance]\n[sig-node] B [Conformance]\n= cli: kubectl\n[sig-cli] C [Conformance]\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	groups, err := ReadSubset(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Name != "node" || groups[0].Why != "the kubelet" || len(groups[0].Tests) != 2 ||
		groups[1].Tests[0] != "[sig-cli] C [Conformance]" {
		t.Fatalf("groups: %+v", groups)
	}
	if err := os.WriteFile(path, []byte("[sig-node] A [Conformance]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSubset(path); err == nil {
		t.Fatal("a test before any group was accepted")
	}
}

func TestFocusExactlyMatchesTheNamesLiterally(t *testing.T) {
	names := []string{"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]", "[sig-x] a.b (c) [Conformance]"}
	re := regexp.MustCompile(FocusExactly(names))
	for _, n := range names {
		if !re.MatchString(n) {
			t.Errorf("%q not matched", n)
		}
	}
	if re.MatchString("[sig-x] aXb (c) [Conformance]") || re.MatchString("[sig-node] Pods should get a host [Conformance]") {
		t.Error("the focus matches a name it does not list")
	}
}

func TestReadJUnitAndTally(t *testing.T) {
	dir := t.TempDir()
	report := `<?xml version="1.0"?><testsuites><testsuite name="Kubernetes e2e suite">
<testcase name="[It] [sig-a] one [Conformance]" status="passed" time="1.5"></testcase>
<testcase name="[It] [sig-a] two [Conformance]" status="failed" time="3"><failure type="failed">Timeline
  [FAILED] Timed out after 60s.
more</failure></testcase>
<testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
</testsuite></testsuites>`
	if err := os.WriteFile(filepath.Join(dir, "junit_01.xml"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := ReadJUnit(dir)
	if err != nil {
		t.Fatal(err)
	}
	passed, others := Tally([]string{"[sig-a] one [Conformance]", "[sig-a] two [Conformance]", "[sig-a] three [Conformance]"}, results)
	if passed != 1 || len(others) != 2 {
		t.Fatalf("passed %d, others %v", passed, others)
	}
	if !strings.Contains(others[0], "failed: [FAILED] Timed out after 60s.") || !strings.HasSuffix(others[1], "did not run") {
		t.Errorf("others: %q", others)
	}
	if _, err := ReadJUnit(t.TempDir()); err == nil {
		t.Error("a folder without a report gave no error")
	}
}

func TestTestImagesCoverTheSuitesNamesAndBuild(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"agnhost", "coredns", "nonewprivs", "sample-apiserver", "etcd", "etcdctl", "next/agnhost"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(bin, b)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, b), []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots := TestImageRoots{Userland: t.TempDir(), Busybox: t.TempDir()}
	names := SuiteImages{"Agnhost": "agnhost:2.59", "AgnhostPrev": "agnhost:2.55", "BusyBox": "busybox:1.37.0-1",
		"Nginx": "nginx:1.14-4", "NginxNew": "nginx:1.15-4", "JessieDnsutils": "jessie-dnsutils:1.7",
		"Nautilus": "nautilus:1.7", "Kitten": "kitten:1.7", "Nonewprivs": "nonewprivs:1.3", "NonRoot": "nonroot:1.4",
		"APIServer": "sample-apiserver:1.29.2", "Etcd": "etcd:3.6.6-0"}
	images, err := TestImages(roots, names, "")
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]Image{}
	for _, img := range images {
		tags[img.Repo+":"+img.Tag] = img
		if _, err := BuildImage(img, bin, "amd64"); err != nil {
			t.Errorf("%s:%s: %v", img.Repo, img.Tag, err)
		}
	}
	for _, want := range []string{"e2e-test-images/agnhost:2.59", "e2e-test-images/agnhost:2.55", "e2e-test-images/busybox:1.37.0-1",
		"e2e-test-images/nginx:1.14-4", "e2e-test-images/nginx:1.15-4", "e2e-test-images/jessie-dnsutils:1.7",
		"e2e-test-images/nautilus:1.7", "e2e-test-images/nonewprivs:1.3", "e2e-test-images/nonroot:1.4",
		"e2e-test-images/sample-apiserver:1.29.2", "etcd:3.6.6-0"} {
		if _, ok := tags[want]; !ok {
			t.Errorf("no image %s", want)
		}
	}
	if len(images) != len(names) {
		t.Errorf("%d images for %d names", len(images), len(names))
	}
	if img := tags["e2e-test-images/nautilus:1.7"]; !strings.Contains(string(img.Files["/data.json"]), `"nautilus.jpg"`) {
		t.Errorf("nautilus data.json: %s", img.Files["/data.json"])
	}
	if img := tags["e2e-test-images/kitten:1.7"]; !strings.Contains(string(img.Files["/etc/os-release"]), "Alpine Linux") {
		t.Errorf("kitten's os-release (v1.36's ImageVolume test reads it): %s", img.Files["/etc/os-release"])
	}
	if img := tags["e2e-test-images/nonroot:1.4"]; img.User != "1234" {
		t.Errorf("nonroot user %q", img.User)
	}
	if got := string(TestRepoList("198.51.100.1:5000")); !strings.Contains(got, "promoterE2eRegistry: 198.51.100.1:5000/e2e-test-images\n") {
		t.Errorf("repo list: %s", got)
	}
}

func TestTestImagesOfAnotherReleaseUseItsPrograms(t *testing.T) {
	roots := TestImageRoots{Userland: t.TempDir(), Busybox: t.TempDir()}
	images, err := TestImages(roots, SuiteImages{"Agnhost": "agnhost:2.63.0", "GlibcDnsTesting": "glibc-dns-testing:2.0.0"}, "v1.36.3")
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 2 || images[0].Binaries["/agnhost"] != "v1.36.3/agnhost" || images[0].Tag != "2.63.0" ||
		images[1].Repo != "e2e-test-images/glibc-dns-testing" {
		t.Fatalf("images: %+v", images)
	}
	if _, err := TestImages(roots, SuiteImages{"Perl": "perl:5.26"}, ""); err == nil {
		t.Error("an image with no maker was accepted")
	}
}

func TestParseImageManifestReadsEveryConfig(t *testing.T) {
	src := `	configs[AgnhostPrev] = Config{list.PromoterE2eRegistry, "agnhost", "2.55"}
	configs[Etcd] = Config{list.GcEtcdRegistry, "etcd", "3.6.8-0"}
	// Pause - when these values are updated
	configs[Pause] = Config{list.GcRegistry, "pause", "3.10.2"}
`
	got := parseImageManifest([]byte(src))
	if len(got) != 3 || got["AgnhostPrev"] != "agnhost:2.55" || got["Etcd"] != "etcd:3.6.8-0" || got["Pause"] != "pause:3.10.2" {
		t.Fatalf("manifest: %v", got)
	}
}

func TestReadRetriedNamesSpecsThatPassedOnALaterAttempt(t *testing.T) {
	dir := t.TempDir()
	if got, err := ReadRetried(dir); err != nil || got != nil {
		t.Fatalf("no report: %v, %v; want none", got, err)
	}
	report := `[{"SpecReports": [
	  {"ContainerHierarchyTexts": ["[sig-a] Thing"], "LeafNodeText": "one [Conformance]", "State": "passed", "NumAttempts": 2},
	  {"ContainerHierarchyTexts": ["[sig-a] Thing"], "LeafNodeText": "two [Conformance]", "State": "passed", "NumAttempts": 1},
	  {"ContainerHierarchyTexts": ["[sig-a] Thing"], "LeafNodeText": "three [Conformance]", "State": "failed", "NumAttempts": 2}
	]}]`
	if err := os.WriteFile(filepath.Join(dir, retryReport), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	retried, err := ReadRetried(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"[sig-a] Thing one [Conformance]", "[sig-a] Thing two [Conformance]", "[sig-a] Thing three [Conformance]"}
	if got := Retried(names, retried); len(got) != 1 || got[0] != names[0] {
		t.Fatalf("retried %v, want only %q", got, names[0])
	}
}

func TestSuiteRunAsksForAttemptsOnlyWhenMoreThanOne(t *testing.T) {
	once := strings.Join(SuiteRun{Attempts: 1}.argv(), " ")
	twice := strings.Join(SuiteRun{Attempts: 2}.argv(), " ")
	if strings.Contains(once, "--flake-attempts") || !strings.Contains(twice, "--flake-attempts=2 --json-report="+retryReport) {
		t.Fatalf("one attempt: %s\ntwo: %s", once, twice)
	}
}
