package api

import (
	"net/http"

	"github.com/excloud/k8sapi/internal/apidocs"
)

// openAPI serves GET /openapi.json: the OpenAPI 3.1 document of every route.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(apidocs.OpenAPI)
}

// docs serves GET /docs: a self-contained page rendering the document; its
// policy lets it run its own script and style and fetch nothing.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", apidocs.CSP())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(apidocs.Page())
}
