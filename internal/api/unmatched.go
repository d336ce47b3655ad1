package api

import (
	"net/http"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
)

// unmatchedError answers a request no route took: a path some route of mux
// serves under another method is a 405 whose Allow names those methods (as
// API Gateway answers); any other is a 404. methods are the methods mux's
// routes take, in the order Allow lists them.
func unmatchedError(w http.ResponseWriter, mux *http.ServeMux, methods []string, req *http.Request) error {
	allowed := allowedMethods(mux, methods, req)
	if len(allowed) == 0 {
		return apperr.NotFound.New()
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return apperr.MethodNotAllowed.Detailf("%s takes %s", req.URL.Path, strings.Join(allowed, ", "))
}

// allowedMethods asks mux which methods have a route for req's path; the
// catch-all "/" is no route, and an unclean path matches none.
func allowedMethods(mux *http.ServeMux, methods []string, req *http.Request) []string {
	var allowed []string
	if !cleanPath(req.URL.EscapedPath()) {
		return nil // mux would match the cleaned path, which is not this one
	}
	for _, m := range methods {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	return allowed
}
