package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/apperr"
)

// Docs is the API description GET /openapi.json and GET /docs serve
// (apidocs.Document). Only HealthFunction, which serves those routes, sets
// it: the other functions' binaries do not carry the document.
type Docs interface {
	OpenAPI() []byte
	Page() []byte
	CSP() string
}

// openAPI serves GET /openapi.json: the OpenAPI 3.1 document of every route.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	if !s.hasDocs(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(s.Docs.OpenAPI())
}

// docs serves GET /docs: a self-contained page rendering the document; its
// policy lets it run its own script and style and fetch nothing.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) {
	if !s.hasDocs(w, r) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", s.Docs.CSP())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(s.Docs.Page())
}

// hasDocs answers 404 for a server wired without the description.
func (s *Server) hasDocs(w http.ResponseWriter, r *http.Request) bool {
	if s.Docs == nil {
		s.writeError(w, r, apperr.NotFound.New())
	}
	return s.Docs != nil
}
