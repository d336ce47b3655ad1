package api

import (
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// rotateCA serves POST /clusters/{id}/rotate-ca: a rotation of the body's
// roots (none: all) is recorded (202, Location: the cluster) and the
// reconciler drives it (docs/CA-ROTATION.md).
func (s *Server) rotateCA(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var req apitypes.RotateCARequest
	var err error
	if r.ContentLength != 0 {
		err = decodeJSON(r, &req)
	}
	var rot apitypes.CARotation
	if err == nil {
		rot, err = s.Rotations.Rotate(r.Context(), org, id, req)
	}
	s.answerRotation(w, r, id, rot, err)
}

// abortCARotation serves POST /clusters/{id}/rotate-ca/abort: the live
// rotation, not yet past its distrust, is turned back (202).
func (s *Server) abortCARotation(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	rot, err := s.Rotations.Abort(r.Context(), org, id)
	s.answerRotation(w, r, id, rot, err)
}

func (s *Server) answerRotation(w http.ResponseWriter, r *http.Request, id int64, rot apitypes.CARotation, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/clusters/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusAccepted, rot)
}
