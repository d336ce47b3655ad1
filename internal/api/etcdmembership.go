package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// etcdRemovals serves GET /bootstrap/control-plane/{vm_id}/etcd-membership:
// the members this node is to remove from etcd (200), or 204 unless it is
// the removing member of a shrinking control plane
// (docs/SCALE-CONTROL-PLANE.md).
func (s *Server) etcdRemovals(w http.ResponseWriter, r *http.Request) {
	askOrNothing(s, w, r, s.EtcdMemberships.EtcdRemovals)
}

// reportEtcdRemoval serves POST /bootstrap/control-plane/{vm_id}/etcd-membership:
// the removing member reports a member it removed; the reconciler then
// deletes the leaving VM.
func (s *Server) reportEtcdRemoval(w http.ResponseWriter, r *http.Request) {
	takeReport(s, w, r, s.EtcdMemberships.ReportEtcdRemoval, func(rep nodebootstrap.EtcdRemovalReport) int64 { return rep.ClusterID })
}
