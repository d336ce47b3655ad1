package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/excloud/k8sapi/internal/apperr"
)

// methods are the methods of Routes, in the order Allow lists them.
var methods = routeMethods()

func routeMethods() []string {
	var ms []string
	for _, r := range Routes {
		if !slices.Contains(ms, r.Method) {
			ms = append(ms, r.Method)
		}
	}
	slices.Sort(ms)
	return ms
}

// unmatchedError answers a request no route took: a path some route of mux
// serves under another method is a 405 whose Allow names those methods (as
// API Gateway answers); any other is a 404.
func unmatchedError(w http.ResponseWriter, mux *http.ServeMux, req *http.Request) error {
	allowed := allowedMethods(mux, req)
	if len(allowed) == 0 {
		return apperr.NotFound.New()
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return apperr.MethodNotAllowed.Detailf("%s takes %s", req.URL.Path, strings.Join(allowed, ", "))
}

// allowedMethods asks mux which methods have a route for req's path; the
// catch-all "/" is no route, and an unclean path matches none.
func allowedMethods(mux *http.ServeMux, req *http.Request) []string {
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
