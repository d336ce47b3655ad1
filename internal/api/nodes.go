package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
)

// nodeBootstrap serves GET /clusters/{id}/nodes/{vm_id}/bootstrap: one
// node's phase, bootstrap window and recorded bundle fetches.
func (s *Server) nodeBootstrap(w http.ResponseWriter, r *http.Request) {
	serveNode(s, w, r, http.StatusOK, s.Nodes.Bootstrap)
}

// rebootstrap serves POST /clusters/{id}/nodes/{vm_id}/rebootstrap: the
// operator re-opens a node's bootstrap (its phases start over from
// pending, its window opens again). It takes no body.
func (s *Server) rebootstrap(w http.ResponseWriter, r *http.Request) {
	serveNode(s, w, r, http.StatusOK, s.Nodes.Reopen)
}

// replaceNode serves POST /clusters/{id}/nodes/{vm_id}/replace: the
// control-plane node's replacement is recorded (202) and the reconciler
// drives it. It takes no body.
func (s *Server) replaceNode(w http.ResponseWriter, r *http.Request) {
	serveNode(s, w, r, http.StatusAccepted, func(ctx context.Context, org auth.Principal, id, vmID int64) (apitypes.NodeReplacement, error) {
		v, err := s.Replacer.ReplaceNode(ctx, org, id, vmID)
		if err == nil {
			w.Header().Set("Location", "/clusters/"+strconv.FormatInt(id, 10)) // where it is followed
		}
		return v, err
	})
}

// serveNode authenticates the operator, parses {id} and {vm_id}, and
// answers status with what do returns for that node.
func serveNode[T any](s *Server, w http.ResponseWriter, r *http.Request, status int, do nodeAction[T]) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	vmID, err := parseID("vm_id", r.PathValue("vm_id"))
	var answer T
	if err == nil {
		answer, err = do(r.Context(), org, id, vmID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, answer)
}
