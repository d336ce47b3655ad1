package integration

import (
	"bytes"
	"context"
	"crypto"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

// The restore drill of docs/RESTORE.md, on real PostgreSQL and KMS (moto):
// a dump restored into a fresh database gives back every cluster's sealed
// keys, opened with the same KMS key. And what a restore means for a
// cluster deleted after the dump: its keys, shredded in the database that
// was lost, come back with the restore (the KMS key still unwraps them),
// so the runbook replays the deletions the audit log holds since then.
func TestRestoreReadsSealedKeysBack(t *testing.T) {
	s := newStack(t)
	kept := s.Found(1, stacktest.ThreeNodes)
	deleted := s.Found(1, stacktest.ThreeNodes)
	dump := pgDump(t, s.dsn)
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(deleted.ClusterID), "", s.Bearer(1)); r.Status != http.StatusOK {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	original := store.New(s.pool)
	if c := s.cluster(t, original, deleted.ClusterID); c.Status != "deleted" || s.opens(t, c) {
		t.Fatalf("cluster %d after its deletion: %s, keys still open", deleted.ClusterID, c.Status)
	}

	restored := store.New(restoreInto(t, dump))
	want := s.cluster(t, original, kept.ClusterID)
	got := s.cluster(t, restored, kept.ClusterID)
	if !s.opens(t, got) {
		t.Fatal("the restored cluster's keys do not open")
	}
	for name, cert := range keyring.CACerts(&want) {
		if !bytes.Equal(keyring.CACerts(&got)[name], cert) {
			t.Errorf("%s: the restored certificate differs", name)
		}
	}
	if c := s.cluster(t, restored, deleted.ClusterID); c.Status != "active" || !s.opens(t, c) {
		t.Errorf("cluster %d deleted after the dump: restored %s, keys open %v; the runbook expects it back, active, keys readable", deleted.ClusterID, c.Status, s.opens(t, c))
	}
}

func (s *stack) cluster(t *testing.T, st *store.Store, id int64) store.Cluster {
	t.Helper()
	c, err := st.Cluster(t.Context(), 1, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// opens reports whether c's sealed keys open with the stack's KMS key
// (no data-key cache: each open is a KMS Decrypt):
// every CA's key matches its certificate, and the service-account key loads.
func (s *stack) opens(t *testing.T, c store.Cluster) bool {
	t.Helper()
	o, err := keyring.Open(t.Context(), s.envelope, &c)
	if err != nil {
		return false
	}
	for name, ca := range o.Trust.CAs {
		pub := ca.Cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
		if !pub.Equal(ca.Key.Public()) {
			t.Errorf("%s: the opened key is not the certificate's", name)
		}
	}
	return len(o.Trust.CAs) == len(keyring.CACerts(&c)) && o.Trust.ServiceAccount != nil
}

// pgDump is pg_dump's custom-format archive of the database at dsn.
func pgDump(t *testing.T, dsn string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "k8sapi.dump")
	if out, err := exec.Command("pg_dump", "--format=custom", "--file="+file, "--dbname="+dsn).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	return file
}

// restoreInto restores dump into a fresh database on the tests' server (the
// roles are the server's, so the grants come back) and connects to it.
func restoreInto(t *testing.T, dump string) *pgxpool.Pool {
	t.Helper()
	restored := testenv.EmptyDatabase(t, "k8sapi_restored")
	if out, err := exec.Command("pg_restore", "--exit-on-error", "--no-owner", "--dbname="+restored, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	pool, err := store.Open(context.Background(), restored, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
