package artifacts

import (
	"testing"

	"github.com/excloud/k8sapi/internal/clusterfacts"
)

// A node at another release than its cluster's record keeps the record's
// pins and bases, takes the release's component versions, and gets the
// release's files pinned from the configured manifest; a pin the record
// holds is never replaced by today's.
func TestAtReleaseIsTheRecordAtTheNodesRelease(t *testing.T) {
	old, _ := ReleaseOf("v1.35.4")
	next, _ := ReleaseOf("v1.36.3")
	configured := Default()
	configured.SHA256 = map[string]string{"kubelet-v1.35.4-linux-amd64": "today-old", "kubelet-v1.36.3-linux-amd64": "today-new"}
	record := configured.For(old, "").Record(old.Kubernetes, clusterfacts.CNICilium)
	record.SHA256 = map[string]string{"kubelet-v1.35.4-linux-amd64": "recorded"}
	record.KubeDownloadBase = "https://mirror.example/k8s"

	got := record.AtRelease(next, configured, clusterfacts.CNICilium)
	if got.CoreDNSVersion != next.CoreDNS || got.PauseVersion != next.Pause || got.EtcdVersion != next.Etcd {
		t.Errorf("components %s/%s/%s, want the release's %s/%s/%s", got.CoreDNSVersion, got.PauseVersion, got.EtcdVersion, next.CoreDNS, next.Pause, next.Etcd)
	}
	if got.KubeDownloadBase != record.KubeDownloadBase {
		t.Errorf("base %q, want the record's", got.KubeDownloadBase)
	}
	want := map[string]string{"kubelet-v1.35.4-linux-amd64": "recorded", "kubelet-v1.36.3-linux-amd64": "today-new"}
	for name, digest := range want {
		if got.SHA256[name] != digest {
			t.Errorf("pin of %s = %q, want %q", name, got.SHA256[name], digest)
		}
	}
	if record.SHA256["kubelet-v1.36.3-linux-amd64"] != "" {
		t.Error("AtRelease wrote into the record's pins")
	}
}
