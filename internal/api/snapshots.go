package api

import (
	"context"
	"net/http"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/requestid"
)

// SnapshotOperator takes and lists a cluster's etcd snapshots for its org.
type SnapshotOperator interface {
	Take(ctx context.Context, org auth.Principal, clusterID int64, requestID string) (apitypes.EtcdSnapshot, error)
	List(ctx context.Context, org auth.Principal, clusterID int64) ([]apitypes.EtcdSnapshot, error)
}

// SnapshotNode is the chosen node's side of a snapshot.
type SnapshotNode interface {
	Next(ctx context.Context, vm auth.BootstrapVM) (*etcdsnapshot.Upload, error)
	Finish(ctx context.Context, vm auth.BootstrapVM, r etcdsnapshot.Report) (apitypes.EtcdSnapshot, error)
	Restore(ctx context.Context, vm auth.BootstrapVM) (etcdsnapshot.Download, error)
}

var (
	_ SnapshotOperator = (*etcdsnapshot.Operator)(nil)
	_ SnapshotNode     = (*etcdsnapshot.Node)(nil)
)

// takeEtcdSnapshot serves POST /clusters/{id}/etcd-snapshots: records a
// pending on-demand snapshot and names the node that takes it (the
// lowest-ordinal Ready control-plane node, etcdsnapshot.ChooseNode). It
// takes no body. 202: the node takes it on its next ask.
func (s *Server) takeEtcdSnapshot(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	snap, err := s.Snapshots.Take(r.Context(), org, id, requestid.From(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, snap)
}

// listEtcdSnapshots serves GET /clusters/{id}/etcd-snapshots, newest first.
func (s *Server) listEtcdSnapshots(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	list, err := s.Snapshots.List(r.Context(), org, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitypes.EtcdSnapshotList{Snapshots: list})
}

// nextEtcdSnapshot serves GET /bootstrap/control-plane/{vm_id}/etcd-snapshot:
// the four proofs, then the VM's pending snapshot with a presigned PUT URL
// of its one object key (200), or 204 when it has none to take. Only an
// answer that issues a URL is stored in the cluster's audit trail (every
// ask is logged): the node asks every few minutes.
func (s *Server) nextEtcdSnapshot(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	up, err := s.SnapshotNodes.Next(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if up == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	audit.NoteFrom(r.Context()).Cluster(up.ClusterID)
	w.Header().Set("Cache-Control", "no-store") // the URL is a credential for its lifetime
	writeJSON(w, http.StatusOK, up)
}

// reportEtcdSnapshot serves POST /bootstrap/control-plane/{vm_id}/etcd-snapshot:
// the node reports its upload (size, SHA-256) or its failure. The body is
// read only once the VM has proved itself.
func (s *Server) reportEtcdSnapshot(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var rep etcdsnapshot.Report
	err := decodeJSON(r, &rep)
	var snap apitypes.EtcdSnapshot
	if err == nil {
		snap, err = s.SnapshotNodes.Finish(r.Context(), vm, rep)
	}
	if snap.ClusterID != 0 {
		audit.NoteFrom(r.Context()).Cluster(snap.ClusterID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

// etcdRestoreURL serves GET /bootstrap/control-plane/{vm_id}/etcd-restore:
// the four proofs, then a presigned GET URL of the snapshot the VM's
// cluster was restored from, with the size and SHA-256 the node checks
// before its etcd starts from it; 404 for a cluster founded empty.
func (s *Server) etcdRestoreURL(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	d, err := s.SnapshotNodes.Restore(r.Context(), vm)
	if d.ClusterID != 0 {
		audit.NoteFrom(r.Context()).Cluster(d.ClusterID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // the URL is a credential for its lifetime
	writeJSON(w, http.StatusOK, d)
}

// etcdCRL serves GET /bootstrap/control-plane/{vm_id}/etcd-crl: the four
// proofs, then the cluster's current etcd CRL (200: its number and PEM),
// or 204 while it has revoked nothing (the node keeps its bundle's empty
// one).
func (s *Server) etcdCRL(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	crl, err := s.EtcdCRLs.EtcdCRL(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if crl == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // the newest one, every time
	writeJSON(w, http.StatusOK, crl)
}
