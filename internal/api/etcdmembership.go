package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// etcdRemovals serves GET /bootstrap/control-plane/{vm_id}/etcd-membership:
// the four proofs, then the members this node is to remove from etcd
// (200), or 204 unless it is the removing member of a shrinking control
// plane (docs/SCALE-CONTROL-PLANE.md). Asked every minute: a read, logged.
func (s *Server) etcdRemovals(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	rm, err := s.EtcdMemberships.EtcdRemovals(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rm == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // the membership as it is now
	writeJSON(w, http.StatusOK, rm)
}

// reportEtcdRemoval serves POST /bootstrap/control-plane/{vm_id}/etcd-membership:
// the removing member reports a member it removed; the reconciler then
// deletes the leaving VM. The body is read only once the VM has proved
// itself.
func (s *Server) reportEtcdRemoval(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var rep nodebootstrap.EtcdRemovalReport
	err := decodeJSON(r, &rep)
	if err == nil {
		rep, err = s.EtcdMemberships.ReportEtcdRemoval(r.Context(), vm, rep)
	}
	if rep.ClusterID != 0 {
		audit.NoteFrom(r.Context()).Cluster(rep.ClusterID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
