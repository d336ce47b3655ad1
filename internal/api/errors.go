package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/requestid"
)

// writeError answers with the JSON error shape. Errors that are not
// *apperr.Error are internal: logged with their cause, answered generically.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := apperr.As(err)
	if !ok {
		e = apperr.Internal.Wrap(err)
	}
	status := e.Status()
	id := requestid.From(r.Context())
	if status >= 500 {
		// The cause goes to the log, keyed by request id, never to the client.
		s.logger().ErrorContext(r.Context(), "request failed", "request_id", id, "code", e.Code, "cause", causeOf(e))
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	apperr.WriteJSON(w, e, id)
}

func causeOf(e *apperr.Error) string {
	if e.Err == nil {
		return ""
	}
	return errors.Unwrap(e).Error()
}
