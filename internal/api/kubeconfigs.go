package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/apitypes"
)

// issueKubeconfig serves POST /clusters/{id}/kubeconfig: a fresh admin
// kubeconfig of one of the operator's active clusters, living the body's
// ttl (no body: the default). Each issue is recorded before it is answered.
func (s *Server) issueKubeconfig(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var req adminkubeconfig.KubeconfigRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	issued, err := s.Kubeconfigs.IssueKubeconfig(r.Context(), org, id, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // the body holds an admin key
	writeJSON(w, http.StatusCreated, issued)
}

// issueCredential serves POST /clusters/{id}/credentials: the operator's
// CSR signed as their admin identity for 15 minutes (a kubeconfig's exec
// plugin asks again when it expires). Recorded before it is answered, as
// every admin kubeconfig is.
func (s *Server) issueCredential(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	var req apitypes.CredentialRequest
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	issued, err := s.Kubeconfigs.IssueCredential(r.Context(), org, id, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store") // a credential, if keyless
	writeJSON(w, http.StatusCreated, issued)
}

// listKubeconfigs serves GET /clusters/{id}/kubeconfigs: the recorded
// issues of the cluster's admin kubeconfigs, newest first (no keys).
func (s *Server) listKubeconfigs(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	issues, err := s.KubeconfigLog.Kubeconfigs(r.Context(), org, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitypes.KubeconfigIssueList{Kubeconfigs: issues})
}
