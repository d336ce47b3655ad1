package api

import (
	"net/http"
)

// getBundle serves GET /bootstrap/control-plane/{vm_id}. The four proofs run
// cheapest first and each fails closed: vm_id parses (400), then the IMDS
// session, the principal token, the org match and the VM match (auth).
func (s *Server) getBundle(w http.ResponseWriter, r *http.Request) {
	vmID, err := parseID("vm_id", r.PathValue("vm_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	vm, err := s.Auth.BootstrapVM(r.Context(), vmID, r.Header.Get("X-exc-imds-token"), r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.Bundles.Bundle(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b.Response())
}
