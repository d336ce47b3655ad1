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

// An upgrade never moves etcd back: a cluster recorded at a later patch
// of the release's etcd minor keeps it; another minor takes the release's.
func TestAtReleaseKeepsALaterEtcdPatch(t *testing.T) {
	next, _ := ReleaseOf("v1.36.3")
	for recorded, want := range map[string]string{
		"v3.6.16": "v3.6.16", next.Etcd: next.Etcd, "v3.6.1": next.Etcd, "v3.5.21": next.Etcd, "": next.Etcd,
	} {
		record := Default()
		record.EtcdVersion = recorded
		if got := record.AtRelease(next, Default(), clusterfacts.CNIFlannel).EtcdVersion; got != want {
			t.Errorf("recorded etcd %q: the node at %s runs %q, want %q", recorded, next.Kubernetes, got, want)
		}
	}
}
