package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/usecase"
)

// AuditSetRemediation is the action a PATCH /clusters/{id} that changes
// only the remediation settings is recorded under, in place of its
// route's: it scales nothing.
const AuditSetRemediation = "cluster.set_remediation"

// patchCluster serves PATCH /clusters/{id}. The whole body is checked
// first (nothing is changed for a bad one); then a new control_plane_count
// is recorded as a scaling (202, Location: the cluster; the reconciler
// drives it, docs/SCALE-CONTROL-PLANE.md), and new remediation settings
// alone are set (200, the cluster as GET shows it; docs/NODE-HEALTH.md).
func (s *Server) patchCluster(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var patch clusterspec.ClusterPatch
	err := decodeJSON(r, &patch)
	var change clusterspec.RemediationChange
	if err == nil {
		change, err = patch.Validate()
	}
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case patch.ControlPlaneCount != nil:
		s.scaleControlPlane(w, r, org, id, patch, change)
	default:
		s.setRemediation(w, r, org, id, change)
	}
}

// scaleControlPlane records the scaling of patch. Settings given beside
// the count are set once the scaling is recorded, so that a refused
// scaling (the count it has, another operation, quorum) changes nothing;
// the event keeps the route's action, the settings change its reason.
func (s *Server) scaleControlPlane(w http.ResponseWriter, r *http.Request, org auth.Principal, id int64,
	patch clusterspec.ClusterPatch, change clusterspec.RemediationChange) {
	g, err := s.Scaler.ScaleControlPlane(r.Context(), org, id, patch)
	if err == nil && change.Any() {
		if _, err = s.noteRemediation(r, org, id, change); err != nil {
			err = usecase.GoesOn(err, fmt.Sprintf("the control plane's scaling %d was recorded and goes on; "+
				"the remediation settings were not changed: PATCH them alone", g.ID))
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/clusters/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusAccepted, g)
}

// setRemediation sets the settings change alone, recorded under
// AuditSetRemediation: 200 and the cluster as GET /clusters/{id} shows it.
func (s *Server) setRemediation(w http.ResponseWriter, r *http.Request, org auth.Principal, id int64, change clusterspec.RemediationChange) {
	audit.NoteFrom(r.Context()).As(AuditSetRemediation)
	v, err := s.noteRemediation(r, org, id, change)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// noteRemediation sets the settings change and notes it as the event's
// reason; it is the cluster as GET shows it.
func (s *Server) noteRemediation(r *http.Request, org auth.Principal, id int64, change clusterspec.RemediationChange) (apitypes.ClusterView, error) {
	v, why, err := s.Clusters.SetRemediation(r.Context(), org, id, change)
	if err == nil {
		audit.NoteFrom(r.Context()).Reason(why)
	}
	return v, err
}
