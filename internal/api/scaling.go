package api

import (
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

// patchCluster serves PATCH /clusters/{id}: a new control_plane_count is
// recorded as a scaling (202, Location: the cluster) and the reconciler
// drives it (docs/SCALE-CONTROL-PLANE.md).
func (s *Server) patchCluster(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var patch clusterspec.ClusterPatch
	err := decodeJSON(r, &patch)
	var g apitypes.ControlPlaneScaling
	if err == nil {
		g, err = s.Scaler.ScaleControlPlane(r.Context(), org, id, patch)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/clusters/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusAccepted, g)
}
