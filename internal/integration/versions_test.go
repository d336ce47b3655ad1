package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// A founding may choose its Kubernetes version from the release table.
// v1.36.3's downloads are not in the shipped manifest yet, so it is
// refused before anything is made, naming v1.36.3's files; with the
// published-digest fallback allowed it is founded at v1.36.3, shows it,
// and its nodes are rendered for it: its binaries, its CoreDNS and pause.
// An unknown version is a 400 naming the table.
func TestFoundingAtAChosenKubernetesVersion(t *testing.T) {
	s := newStack(t)
	body := `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"kubernetes_version":"v1.36.3"}`
	r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", body, s.Bearer(1))
	if r.Status != http.StatusUnprocessableEntity || r.ErrorCode(t) != "artifacts_not_pinned" || !strings.Contains(string(r.Body), "kubelet-v1.36.3-linux-amd64") {
		t.Fatalf("unpinned v1.36.3 = %d %s, want 422 artifacts_not_pinned naming its kubelet", r.Status, r.Body)
	}
	assertNothingFounded(t, s)
	bad := strings.Replace(body, "v1.36.3", "v1.30.0", 1)
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", bad, s.Bearer(1)); r.Status != http.StatusBadRequest ||
		!strings.Contains(string(r.Body), "kubernetes_version: must be a supported Kubernetes version: v1.35.4, v1.36.3") {
		t.Fatalf("v1.30.0 = %d %s", r.Status, r.Body)
	}

	s.founder.Settings.Artifacts.DigestFallback = true
	res := s.Found(1, body)
	if res.KubernetesVersion != "v1.36.3" {
		t.Fatalf("founded at %s", res.KubernetesVersion)
	}
	files := s.bundleFiles(res.ControlPlaneVMIDs[0])
	for path, want := range map[string]string{
		"/etc/exk8s/config/cluster.env": "v1.36.3",
	} {
		if !strings.Contains(files[path], want) {
			t.Errorf("%s lacks %s:\n%s", path, want, files[path])
		}
	}
	all := strings.Join(mapValues(files), "\n")
	for _, want := range []string{"coredns/coredns:v1.14.2", "pause:3.10.2"} {
		if !strings.Contains(all, want) {
			t.Errorf("no file of the bundle names %s", want)
		}
	}
	plain := s.Found(1, stacktest.ThreeNodes)
	if plain.KubernetesVersion != "v1.35.4" {
		t.Errorf("a founding without kubernetes_version is at %s, want the deployment's v1.35.4", plain.KubernetesVersion)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
