package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// upgradeAddons serves GET /bootstrap/control-plane/{vm_id}/addons: the
// four proofs, then the cluster addons this node is to apply at an
// upgrade's release (200), or 204 unless it is the node the upgrade's due
// addons step chose (docs/UPGRADES.md). Asked every minute: a read, logged.
func (s *Server) upgradeAddons(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	a, err := s.Addons.Addons(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // the step as it is now
	writeJSON(w, http.StatusOK, a)
}

// reportUpgradeAddons serves POST /bootstrap/control-plane/{vm_id}/addons:
// the chosen node reports the addons applied, or why not; the upgrade
// then moves on, or pauses naming the node. The body is read only once
// the VM has proved itself.
func (s *Server) reportUpgradeAddons(w http.ResponseWriter, r *http.Request) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var rep nodebootstrap.AddonsReport
	err := decodeJSON(r, &rep)
	if err == nil {
		rep, err = s.Addons.ReportAddons(r.Context(), vm, rep)
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
