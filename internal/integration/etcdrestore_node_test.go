package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/stacktest"
)

type restoreDownload struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	SizeBytes int64     `json:"size_bytes"`
	SHA256    string    `json:"sha256"`
}

func (s *stack) askRestore(vm vmProof, pathVM int64) stacktest.Response {
	s.t.Helper()
	return stacktest.Do(s.t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(pathVM)+"/etcd-restore", "", map[string]string{
		"X-exc-imds-token": vm.imds, "Authorization": "Bearer " + vm.access,
	})
}

// get downloads a presigned URL as curl does.
func get(t *testing.T, rawURL string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// A restored cluster's node renders the restore script and gets a
// presigned URL that GETs exactly the uploaded snapshot (fetched from
// moto's S3 and compared byte for byte), with the size and SHA-256 the
// upload recorded, uncacheable and in the trail. A worker of that cluster
// and a node of a cluster founded empty get 404; one VM cannot ask as
// another.
func TestRestoredNodeDownloadsItsSnapshot(t *testing.T) {
	s, bucket := snapshotStack(t)
	old, snap := s.uploadedSnapshot(1)
	res := s.Found(1, restoreBody(old.ClusterID, snap.ID))
	node := s.proof(res.ControlPlaneVMIDs[1])

	if b := s.FetchBundle(node.id, node.imds, node.access); b.Status != http.StatusOK || !strings.Contains(string(b.Body), "exk8s-etcd-restore.sh") {
		t.Fatalf("a restored cluster's bundle: %d, restore script rendered: %v", b.Status, strings.Contains(string(b.Body), "exk8s-etcd-restore.sh"))
	}
	r := s.askRestore(node, node.id)
	if r.Status != http.StatusOK {
		t.Fatalf("GET etcd-restore = %d %s", r.Status, r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	var d restoreDownload
	r.JSON(t, &d)
	if d.SizeBytes != *snap.SizeBytes || d.SHA256 != *snap.SHA256 || d.ExpiresAt.IsZero() {
		t.Fatalf("download %+v, want size %d sha256 %s", d, *snap.SizeBytes, *snap.SHA256)
	}
	code, body := get(t, d.URL)
	want := []byte("etcd snapshot bytes of cluster " + itoa(old.ClusterID))
	if code != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("GET the presigned URL: %d %q, want %q", code, body, want)
	}
	if key, err := objectstore.KeyOf(bucket.Name, d.URL); err != nil || key != snap.ObjectKey {
		t.Errorf("the URL names %q (%v), want %q", key, err, snap.ObjectKey)
	}
	var audited bool
	for _, e := range s.auditEvents(1, res.ClusterID) {
		audited = audited || (e.Action == "etcd_restore.download_url" && e.Outcome == "succeeded" && e.Principal == "org:1:vm:"+itoa(node.id))
	}
	if !audited {
		t.Error("the download URL is not in the restored cluster's trail")
	}

	// Another VM's vm_id: refused by the proofs.
	if r := s.askRestore(node, res.ControlPlaneVMIDs[2]); r.Status != http.StatusForbidden {
		t.Errorf("asking as another VM: %d %s", r.Status, r.Body)
	}
	// A worker of the restored cluster: etcd's data is no worker's.
	w := s.AddPool(1, res.ClusterID, stacktest.TwoWorkers).Nodes[0]
	if r := s.askRestore(s.proof(w.VMID), w.VMID); r.Status != http.StatusNotFound || r.ErrorCode(t) != "not_found" {
		t.Errorf("a worker of the restored cluster: %d %s", r.Status, r.Body)
	}
	// A node of a cluster founded empty: nothing to restore.
	plain := s.proof(old.ControlPlaneVMIDs[1])
	if r := s.askRestore(plain, plain.id); r.Status != http.StatusNotFound || r.ErrorCode(t) != "not_found" {
		t.Errorf("a cluster founded empty: %d %s", r.Status, r.Body)
	}
}
