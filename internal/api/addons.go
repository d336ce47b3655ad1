package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// upgradeAddons serves GET /bootstrap/control-plane/{vm_id}/addons: the
// cluster addons this node is to apply at an upgrade's release (200), or
// 204 unless it is the node the upgrade's due addons step chose
// (docs/UPGRADES.md).
func (s *Server) upgradeAddons(w http.ResponseWriter, r *http.Request) {
	askOrNothing(s, w, r, s.Addons.Addons)
}

// reportUpgradeAddons serves POST /bootstrap/control-plane/{vm_id}/addons:
// the chosen node reports the addons applied, or why not; the upgrade
// then moves on, or pauses naming the node.
func (s *Server) reportUpgradeAddons(w http.ResponseWriter, r *http.Request) {
	takeReport(s, w, r, s.Addons.ReportAddons, func(rep nodebootstrap.AddonsReport) int64 { return rep.ClusterID })
}
