package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
)

// restoreBody is POST /clusters founding three nodes from snapshot snap of
// cluster from.
func restoreBody(from, snap int64) string {
	return fmt.Sprintf(`{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3,
		"restore_from":{"cluster_id":%d,"snapshot_id":%d}}`, from, snap)
}

// uploadedSnapshot founds a cluster of org, makes its first node Ready and
// has it take, upload (a real object in moto's S3) and report a snapshot.
func (s *stack) uploadedSnapshot(org int64) (apitypes.FoundingResult, snapshotItem) {
	s.t.Helper()
	res := s.Found(org, stacktest.ThreeNodes)
	node := s.proof(res.ControlPlaneVMIDs[0])
	s.FetchBundle(node.id, node.imds, node.access)
	s.mustReport(node, `{"phase":"ready"}`, http.StatusNoContent)
	if r := s.takeSnapshot(org, res.ClusterID); r.Status != http.StatusAccepted {
		s.t.Fatalf("POST etcd-snapshots = %d %s", r.Status, r.Body)
	}
	var up uploadBody
	s.askSnapshot(node).JSON(s.t, &up)
	body := []byte("etcd snapshot bytes of cluster " + itoa(res.ClusterID))
	sum := sha256.Sum256(body)
	if code := put(s.t, up.UploadURL, body); code != http.StatusOK {
		s.t.Fatalf("PUT to the presigned URL: %d", code)
	}
	rep := fmt.Sprintf(`{"id":%d,"size_bytes":%d,"sha256":"%s"}`, up.ID, len(body), hex.EncodeToString(sum[:]))
	if r := s.reportSnapshot(node, rep); r.Status != http.StatusOK {
		s.t.Fatalf("report: %d %s", r.Status, r.Body)
	}
	return res, s.snapshots(org, res.ClusterID)[0]
}

// A cluster founded from a snapshot has the old cluster's CAs but its
// etcd CA (its own: pki's NewOnRestore), service-account key and Secrets
// encryption key, sealed under its own data key (other ciphertexts), and
// records the snapshot it restores from; deleting the old cluster leaves
// the new one's copies whole.
func TestFoundFromSnapshotInheritsTheTrust(t *testing.T) {
	s, _ := snapshotStack(t)
	old, snap := s.uploadedSnapshot(1)
	res := s.Found(1, restoreBody(old.ClusterID, snap.ID))

	owner := store.New(s.pool)
	was, now := s.cluster(t, owner, old.ClusterID), s.cluster(t, owner, res.ClusterID)
	for name, cert := range keyring.CACerts(&was) {
		same := bytes.Equal(keyring.CACerts(&now)[name], cert)
		if want := name != pki.EtcdCA; same != want {
			t.Errorf("%s: the restored cluster's certificate is the old one's: %v, want %v", name, same, want)
		}
	}
	if now.ServiceAccountPub != was.ServiceAccountPub {
		t.Error("the service-account public key is not the old one's")
	}
	for what, pair := range map[string][2][]byte{
		"data key": {was.WrappedDataKey, now.WrappedDataKey}, "cluster CA key": {was.CAKeySealed, now.CAKeySealed},
		"etcd CA key": {was.EtcdCAKeySealed, now.EtcdCAKeySealed}, "service-account key": {was.ServiceAccountKeySealed, now.ServiceAccountKeySealed},
		"Secrets key": {was.SecretsEncryptionKeySealed, now.SecretsEncryptionKeySealed},
	} {
		if bytes.Equal(pair[0], pair[1]) {
			t.Errorf("%s: the same ciphertext on both clusters; want it sealed again", what)
		}
	}
	if now.RestoredFromSnapshotID == nil || *now.RestoredFromSnapshotID != snap.ID || *now.RestoreObjectKey != snap.ObjectKey ||
		*now.RestoreSizeBytes != *snap.SizeBytes || *now.RestoreSHA256 != *snap.SHA256 {
		t.Fatalf("recorded restore: %v %v %v %v", now.RestoredFromSnapshotID, now.RestoreObjectKey, now.RestoreSizeBytes, now.RestoreSHA256)
	}
	var view struct {
		RestoredFrom *int64 `json:"restored_from_snapshot_id"`
	}
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(res.ClusterID), "", s.Bearer(1)).JSON(t, &view)
	if view.RestoredFrom == nil || *view.RestoredFrom != snap.ID {
		t.Errorf("GET /clusters/{id}: restored_from_snapshot_id %v, want %d", view.RestoredFrom, snap.ID)
	}
	secretsKeysEqual(t, s, was, now)

	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(old.ClusterID), "", s.Bearer(1)); r.Status != http.StatusOK {
		t.Fatalf("delete the old cluster = %d %s", r.Status, r.Body)
	}
	if !s.opens(t, s.cluster(t, owner, res.ClusterID)) {
		t.Error("the restored cluster's keys do not open once the old cluster is deleted")
	}
	// The old cluster's keys are shredded: its snapshots restore no more.
	if r := s.Create(1, restoreBody(old.ClusterID, snap.ID)); r.Status != http.StatusConflict || r.ErrorCode(t) != "snapshot_not_restorable" {
		t.Errorf("restore from a deleted cluster: %d %s", r.Status, r.Body)
	}
}

// secretsKeysEqual: the two clusters' Secrets encryption keys open to the
// same bytes (the snapshot's Secrets are sealed under it).
func secretsKeysEqual(t *testing.T, s *stack, a, b store.Cluster) {
	t.Helper()
	oa, err := keyring.Open(t.Context(), s.envelope, &a)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := keyring.Open(t.Context(), s.envelope, &b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(oa.Trust.SecretsEncryptionKey, ob.Trust.SecretsEncryptionKey) || !bytes.Equal(oa.ServiceAccountKey, ob.ServiceAccountKey) {
		t.Error("the opened Secrets or service-account keys differ")
	}
}

// What restore_from refuses, each before anything is written: another
// org's snapshot (404, as a missing one), a snapshot of another cluster
// than named, a pending or failed snapshot (409), a mismatch (409 naming
// the field).
func TestFoundFromSnapshotRefusals(t *testing.T) {
	s, _ := snapshotStack(t)
	old, snap := s.uploadedSnapshot(1)
	clustersBefore := s.countClusters(t)

	other := s.Found(1, stacktest.ThreeNodes)
	for name, c := range map[string]struct {
		org    int64
		body   string
		status int
		code   string
	}{
		"another org's snapshot": {2, restoreBody(old.ClusterID, snap.ID), http.StatusNotFound, "not_found"},
		"no such snapshot":       {1, restoreBody(old.ClusterID, snap.ID+100), http.StatusNotFound, "not_found"},
		"another cluster's":      {1, restoreBody(other.ClusterID, snap.ID), http.StatusNotFound, "not_found"},
		"another CNI":            {1, restoreBody(old.ClusterID, snap.ID)[:1] + `"cni":"bridge",` + restoreBody(old.ClusterID, snap.ID)[1:], http.StatusConflict, "restore_incompatible"},
		"another key algorithm":  {1, `{"key_algorithm":"rsa-2048",` + restoreBody(old.ClusterID, snap.ID)[1:], http.StatusConflict, "restore_incompatible"},
		"no snapshot id":         {1, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"restore_from":{"cluster_id":1}}`, http.StatusBadRequest, "invalid_request"},
	} {
		if r := s.Create(c.org, c.body); r.Status != c.status || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", name, r.Status, r.Body, c.status, c.code)
		}
	}

	// A pending snapshot, then the same one failed.
	if r := s.takeSnapshot(1, old.ClusterID); r.Status != http.StatusAccepted {
		t.Fatalf("POST etcd-snapshots = %d %s", r.Status, r.Body)
	}
	pending := s.snapshots(1, old.ClusterID)[0]
	if r := s.Create(1, restoreBody(old.ClusterID, pending.ID)); r.Status != http.StatusConflict || r.ErrorCode(t) != "snapshot_not_restorable" {
		t.Errorf("pending snapshot: %d %s", r.Status, r.Body)
	}
	node := s.proof(pending.NodeVMID)
	if r := s.reportSnapshot(node, fmt.Sprintf(`{"id":%d,"error":"etcdctl failed"}`, pending.ID)); r.Status != http.StatusOK {
		t.Fatalf("failure report: %d %s", r.Status, r.Body)
	}
	if r := s.Create(1, restoreBody(old.ClusterID, pending.ID)); r.Status != http.StatusConflict || r.ErrorCode(t) != "snapshot_not_restorable" {
		t.Errorf("failed snapshot: %d %s", r.Status, r.Body)
	}
	if got := s.countClusters(t); got != clustersBefore+1 { // the one founded above, no other
		t.Errorf("%d clusters after the refusals, want %d", got, clustersBefore+1)
	}
}

func (s *stack) countClusters(t *testing.T) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM kube_clusters`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
