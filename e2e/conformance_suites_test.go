package e2e

import (
	"path/filepath"
	"testing"

	"github.com/excloud/k8sapi/e2e/harness"
)

// conformanceSuite is one release's conformance suite as the proof runs
// it: the release whose tests and test images it holds, and dir, the
// folder under the build folder where build-components.sh put its programs
// ("" for the founding release's; the release itself for the upgrade's,
// built with -modfile from components/conformance/kubernetes-<release>.mod,
// as the Kubernetes commands' second release).
type conformanceSuite struct {
	release string
	dir     string
	images  harness.SuiteImages
}

// conformanceSuites are the suites the proof can run: the founding
// release's judges every cluster it boots; the upgrade's judges the cluster
// `make conformance CONFORMANCE_UPGRADE=1` moved to that release. Each
// suite's images are the names and tags its test/utils/image/manifest.go
// gives them (TestConformanceSuitesAreTheReleases reads the manifests).
var conformanceSuites = []conformanceSuite{
	{release: "v1.35.4", images: harness.SuiteImages{
		"Agnhost": "agnhost:2.59", "AgnhostPrev": "agnhost:2.55", "Nautilus": "nautilus:1.7", "Kitten": "kitten:1.7",
		"Nginx": "nginx:1.14-4", "NginxNew": "nginx:1.15-4", "BusyBox": "busybox:1.37.0-1",
		"JessieDnsutils": "jessie-dnsutils:1.7", "Nonewprivs": "nonewprivs:1.3", "NonRoot": "nonroot:1.4",
		"APIServer": "sample-apiserver:1.29.2", "Etcd": "etcd:3.6.6-0",
	}},
	{release: "v1.36.3", dir: "v1.36.3", images: harness.SuiteImages{
		"Agnhost": "agnhost:2.63.0", "AgnhostPrev": "agnhost:2.55", "Nautilus": "nautilus:1.8", "Kitten": "kitten:1.8",
		"Nginx": "nginx:1.15-4", "NginxNew": "nginx:1.27-0", "BusyBox": "busybox:1.37.0-1",
		"GlibcDnsTesting": "glibc-dns-testing:2.0.0", "Nonewprivs": "nonewprivs:1.4", "NonRoot": "nonroot:1.5",
		"APIServer": "sample-apiserver:1.29.2", "Etcd": "etcd:3.6.8-0",
	}},
}

// suiteOf is the suite of release, which must be in conformanceSuites.
func suiteOf(t *testing.T, release string) conformanceSuite {
	t.Helper()
	for _, s := range conformanceSuites {
		if s.release == release {
			return s
		}
	}
	fatalf(t, "no conformance suite of %s in conformanceSuites", release)
	return conformanceSuite{}
}

// binDir is the folder of the suite's e2e.test, ginkgo and the kubectl of
// its release.
func (s conformanceSuite) binDir() string { return filepath.Join(binDir, s.dir) }

// modFile is components/conformance's module file the suite is built
// from, "" for its go.mod (build-components.sh's rule).
func (s conformanceSuite) modFile() string {
	if s.dir == "" {
		return ""
	}
	return "kubernetes-" + s.release + ".mod"
}

// list is the suite's own list of its [Conformance] tests.
func (s conformanceSuite) list(t *testing.T) []harness.ConformanceTest {
	t.Helper()
	list, err := harness.ConformanceList(filepath.Join(e2eDir, "components"), s.modFile())
	if err != nil {
		fatal(t, err)
	}
	return list
}

// testImages are the suite's images made here, from the test images' roots.
func (s conformanceSuite) testImages(t *testing.T, roots harness.TestImageRoots) []harness.Image {
	t.Helper()
	images, err := harness.TestImages(roots, s.images, s.dir)
	if err != nil {
		fatal(t, err)
	}
	return images
}

// TestConformanceSuitesAreTheReleases holds the table to what the proof
// builds and boots: a suite for the founding release built from go.mod
// and one for the upgrade's from its module file, each pinning
// k8s.io/kubernetes at its release; each suite's images are what that
// release's manifest names, and the pause it names is the one the proof
// serves for that release (its own pause image, not among the test
// images).
func TestConformanceSuitesAreTheReleases(t *testing.T) {
	founding, upgrade := suiteOf(t, nodeVersions.Kubernetes), suiteOf(t, upgradeRelease.Kubernetes)
	if founding.dir != "" || upgrade.dir != upgradeRelease.KubeDir {
		errorf(t, "the suites' folders %q and %q, want the build folder and %q (the upgrade's kube commands')", founding.dir, upgrade.dir, upgradeRelease.KubeDir)
	}
	pause := map[string]string{founding.release: pauseVersion, upgrade.release: upgradeRelease.Pause}
	for _, s := range conformanceSuites {
		dir, err := harness.KubernetesModuleDir(filepath.Join(e2eDir, "components"), s.modFile())
		if err != nil {
			fatal(t, err)
		}
		if filepath.Base(dir) != "kubernetes@"+s.release {
			errorf(t, "the suite of %s builds from %s", s.release, dir)
		}
		manifest, err := harness.ReadImageManifest(dir)
		if err != nil {
			fatal(t, err)
		}
		for id, ref := range s.images {
			if manifest[id] != ref {
				errorf(t, "the suite of %s: %s is %q, its manifest names %q", s.release, id, ref, manifest[id])
			}
		}
		if want := "pause:" + pause[s.release]; manifest["Pause"] != want {
			errorf(t, "the suite of %s names %s, the proof serves %s", s.release, manifest["Pause"], want)
		}
		list := s.list(t)
		t.Logf("the suite of %s: %d [Conformance] tests, %d of them serial; %d test images made here", s.release,
			len(list), len(harness.CodeNames(list, harness.ConformanceTest.Serial)), len(s.images))
	}
}
