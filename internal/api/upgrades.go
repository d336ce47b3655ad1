package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
)

// AuditUpgradeOverride is the action an upgrade that overrode the
// deprecated-API gate is recorded under, in place of its route's.
const AuditUpgradeOverride = "cluster.upgrade_deprecated_apis_overridden"

// upgradeCluster serves POST /clusters/{id}/upgrade: the plan (200) for a
// dry run, else the plan and the upgrade recorded (202; the reconciler
// drives it), refused with the first gate that failed.
func (s *Server) upgradeCluster(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var req apitypes.UpgradeRequest
	err := decodeJSON(r, &req)
	var answer apitypes.UpgradeAnswer
	if err == nil {
		answer, err = s.Upgrades.Upgrade(r.Context(), org, id, req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if answer.Upgrade == nil {
		writeJSON(w, http.StatusOK, answer)
		return
	}
	if answer.Upgrade.DeprecatedAPIsOverridden {
		audit.NoteFrom(r.Context()).As(AuditUpgradeOverride)
	}
	w.Header().Set("Location", upgradePath(id))
	writeJSON(w, http.StatusAccepted, answer)
}

func upgradePath(id int64) string { return "/clusters/" + strconv.FormatInt(id, 10) + "/upgrade" }

// getUpgrade serves GET /clusters/{id}/upgrade: the cluster's newest.
func (s *Server) getUpgrade(w http.ResponseWriter, r *http.Request) {
	s.serveUpgrade(w, r, http.StatusOK, s.Upgrades.Current)
}

// resumeUpgrade serves POST /clusters/{id}/upgrade/resume.
func (s *Server) resumeUpgrade(w http.ResponseWriter, r *http.Request) {
	s.serveUpgrade(w, r, http.StatusAccepted, s.Upgrades.Resume)
}

// abortUpgrade serves POST /clusters/{id}/upgrade/abort.
func (s *Server) abortUpgrade(w http.ResponseWriter, r *http.Request) {
	s.serveUpgrade(w, r, http.StatusAccepted, s.Upgrades.Abort)
}

// serveUpgrade authenticates the operator, reads {id} and an optional
// empty JSON object, and answers status with what do returns.
func (s *Server) serveUpgrade(w http.ResponseWriter, r *http.Request, status int,
	do func(context.Context, auth.Principal, int64) (apitypes.Upgrade, error)) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var u apitypes.Upgrade
	err := error(nil)
	if r.Method == http.MethodPost {
		err = decodeOptionalJSON(r, &apitypes.UpgradeAction{})
	}
	if err == nil {
		u, err = do(r.Context(), org, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, u)
}
