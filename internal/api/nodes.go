package api

import (
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/founding"
	"github.com/excloud/k8sapi/internal/progress"
)

// nodeBootstrap serves GET /clusters/{id}/nodes/{vm_id}/bootstrap: one
// node's phase, bootstrap window and recorded bundle fetches.
func (s *Server) nodeBootstrap(w http.ResponseWriter, r *http.Request) {
	s.serveNode(w, r, s.Nodes.Bootstrap)
}

// rebootstrap serves POST /clusters/{id}/nodes/{vm_id}/rebootstrap: the
// operator re-opens a node's bootstrap (its phases start over from
// pending, its window opens again). It takes no body.
func (s *Server) rebootstrap(w http.ResponseWriter, r *http.Request) {
	s.serveNode(w, r, s.Nodes.Reopen)
}

// serveNode authenticates the operator, parses {id} and {vm_id}, and
// answers with what do returns for that node.
func (s *Server) serveNode(w http.ResponseWriter, r *http.Request, do nodeAction) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	vmID, err := parseID("vm_id", r.PathValue("vm_id"))
	var b progress.NodeBootstrap
	if err == nil {
		b, err = do(r.Context(), org, id, vmID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// replaceNode serves POST /clusters/{id}/nodes/{vm_id}/replace: the
// control-plane node's replacement is recorded (202) and the reconciler
// drives it. It takes no body.
func (s *Server) replaceNode(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	vmID, err := parseID("vm_id", r.PathValue("vm_id"))
	var v founding.ReplacementView
	if err == nil {
		v, err = s.Replacer.ReplaceNode(r.Context(), org, id, vmID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/clusters/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusAccepted, v)
}
