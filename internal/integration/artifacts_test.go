package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// countingTransport counts the requests k8sapi makes of the platform.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// withArtifacts configures the stack's artifact set.
func withArtifacts(a artifacts.Set) func(*stacktest.Config) {
	return func(c *stacktest.Config) { c.Artifacts = &a }
}

// Founding refuses, before any remote call, a cluster whose amd64 nodes
// would have to trust a digest the download mirror serves; the answer names
// the files and both fixes. Allowing the fallback founds it, and its nodes
// are told so.
func TestFoundingRefusesUnpinnedArtifacts(t *testing.T) {
	a := stacktest.PinnedArtifacts()
	for _, f := range a.Files(artifacts.DefaultKubernetesVersion, "") {
		if f.Key == "etcd" || f.Key == "helm" {
			delete(a.SHA256, f.Name)
		}
	}
	platform := &countingTransport{}
	s := newStack(t, withArtifacts(a), func(c *stacktest.Config) {
		platform.next = c.SimClient.Transport
		c.SimClient = &http.Client{Transport: platform}
	})
	s.founder.Envelope = deadKMS() // a KMS call would answer 503 instead
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, s.Bearer(1))
	if r.Status != http.StatusUnprocessableEntity || r.ErrorCode(t) != "artifacts_not_pinned" {
		t.Fatalf("= %d %s, want 422 artifacts_not_pinned", r.Status, r.Body)
	}
	var body struct{ Error struct{ Message string } }
	r.JSON(t, &body)
	msg := body.Error.Message
	for _, want := range []string{"etcd-v3.6.10-linux-amd64.tar.gz, helm-v3.19.2-linux-amd64.tar.gz (amd64)",
		"ARTIFACT_MANIFEST_FILE", "scripts/pin-artifacts.sh", "ARTIFACT_DIGEST_FALLBACK=true", "nothing was created"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "arm64") || platform.n.Load() != 0 {
		t.Errorf("message names arm64 files, or %d platform calls were made: %s", platform.n.Load(), msg)
	}
	assertNothingFounded(t, s)

	s.founder.Envelope = s.envelope
	s.founder.Settings.Artifacts.DigestFallback = true
	res := s.Found(1, stacktest.ThreeNodes)
	files := s.bundleFiles(res.ControlPlaneVMIDs[0])
	if !strings.Contains(files["/etc/exk8s/config/cluster.env"], "\nARTIFACT_DIGEST_FALLBACK=true\n") ||
		strings.Contains(files["/etc/exk8s/config/artifacts.sha256"], "etcd-v3.6.10") {
		t.Errorf("a founding that allows the fallback:\n%s\n%s", files["/etc/exk8s/config/cluster.env"], files["/etc/exk8s/config/artifacts.sha256"])
	}
}

// bundleFiles fetches vmID's bundle as the VM and returns its files.
func (s *stack) bundleFiles(vmID int64) map[string]string {
	s.t.Helper()
	imds, access := s.VMCredentials(vmID)
	r := s.FetchBundle(vmID, imds, access)
	if r.Status != http.StatusOK {
		s.t.Fatalf("bundle of vm %d: %d %s", vmID, r.Status, r.Body)
	}
	var b bundleBody
	r.JSON(s.t, &b)
	return b.Files
}

// What a cluster's nodes download and trust is recorded when it is founded:
// a later change of the configuration (other pins, mirror, registry,
// fallback) changes nothing in its bundles, and clusters founded after it
// get the new set. A cluster founded before sets were recorded renders from
// the configuration of the moment.
func TestRecordedArtifactsOutliveAConfigChange(t *testing.T) {
	before := stacktest.PinnedArtifacts()
	before.ImageRegistry, before.ImageRegistryPlainHTTP = "registry.a.internal:5000", true
	s := newStack(t, withArtifacts(before))
	vm := s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs[0]
	founded := s.bundleFiles(vm)

	after := stacktest.PinnedArtifacts()
	for name := range after.SHA256 {
		after.SHA256[name] = strings.Repeat("f", 64)
	}
	after.ImageRegistry, after.KubeDownloadBase, after.DigestFallback = "registry.b.internal", "https://mirror.b.internal/kube", true
	s.founder.Settings.Artifacts, s.bundles.Artifacts = after, after

	again := s.bundleFiles(vm)
	for _, f := range []string{"/etc/exk8s/config/artifacts.sha256", "/etc/exk8s/config/cluster.env",
		"/usr/local/bin/exk8s-install-prereqs.sh", "/etc/kubernetes/manifests/kube-apiserver.yaml"} {
		if again[f] != founded[f] {
			t.Errorf("%s changed with the configuration:\n%s\n---\n%s", f, founded[f], again[f])
		}
	}
	pinned := "\n" + before.SHA256["kubelet-v1.35.4-linux-amd64"] + "  kubelet-v1.35.4-linux-amd64\n"
	if !strings.Contains(again["/etc/exk8s/config/artifacts.sha256"], pinned) ||
		!strings.Contains(again["/etc/exk8s/config/cluster.env"], "\nIMAGE_REGISTRY_PLAIN_HTTP=true\n") {
		t.Errorf("the founding's pins and registry scheme are not the bundle's:\n%s", again["/etc/exk8s/config/artifacts.sha256"])
	}
	assertRendersFrom(t, s.bundleFiles(s.Found(1, stacktest.ThreeNodes).ControlPlaneVMIDs[0]), "a cluster founded after the change", after)

	if _, err := s.pool.Exec(context.Background(), `UPDATE kube_clusters SET artifacts = NULL
		WHERE id = (SELECT kube_cluster_id FROM kube_nodes WHERE vm_id = $1)`, vm); err != nil {
		t.Fatal(err)
	}
	assertRendersFrom(t, s.bundleFiles(vm), "a cluster founded before sets were recorded", after)
}

// assertRendersFrom checks that files were rendered from a (its registry,
// kube base, fallback and kubelet pin).
func assertRendersFrom(t *testing.T, files map[string]string, what string, a artifacts.Set) {
	t.Helper()
	env, pins := files["/etc/exk8s/config/cluster.env"], files["/etc/exk8s/config/artifacts.sha256"]
	for _, want := range []string{"\nIMAGE_REGISTRY='" + a.ImageRegistry + "'\n", "\nKUBE_DOWNLOAD_BASE='" + a.KubeDownloadBase + "'\n",
		"\nARTIFACT_DIGEST_FALLBACK=true\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("%s: cluster.env lacks %q:\n%s", what, want, env)
		}
	}
	if !strings.Contains(pins, "\n"+a.SHA256["kubelet-v1.35.4-linux-amd64"]+"  kubelet-v1.35.4-linux-amd64\n") {
		t.Errorf("%s: artifacts.sha256 is not the configured one:\n%s", what, pins)
	}
}
