package api

import (
	"context"
	"net/http"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
)

// askOrNothing serves a timer's ask on a VM route: the four proofs, then
// ask's answer for the VM (200, no-store: as things are now), or 204 when
// it has nothing for it. Asked every minute: a read, logged.
func askOrNothing[T any](s *Server, w http.ResponseWriter, r *http.Request, ask func(context.Context, auth.BootstrapVM) (*T, error)) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	a, err := ask(r.Context(), vm)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, a)
}

// takeReport serves a VM's report on a VM route: the four proofs, then
// its JSON body (read only once the VM has proved itself) to take, the
// cluster it names (cluster of the answer, 0 none) noted for the trail.
func takeReport[T any](s *Server, w http.ResponseWriter, r *http.Request, take func(context.Context, auth.BootstrapVM, T) (T, error), cluster func(T) int64) {
	vm, ok := s.bootstrapVM(w, r)
	if !ok {
		return
	}
	var rep T
	err := decodeJSON(r, &rep)
	if err == nil {
		rep, err = take(r.Context(), vm, rep)
	}
	if id := cluster(rep); id != 0 {
		audit.NoteFrom(r.Context()).Cluster(id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
