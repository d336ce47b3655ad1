package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/requestid"
)

// statusOf is the one map from error kinds to HTTP statuses.
var statusOf = map[apperr.Kind]int{
	apperr.Internal:        http.StatusInternalServerError,
	apperr.Invalid:         http.StatusBadRequest,
	apperr.Unauthenticated: http.StatusUnauthorized,
	apperr.Forbidden:       http.StatusForbidden,
	apperr.NotFound:        http.StatusNotFound,
	apperr.Conflict:        http.StatusConflict,
	apperr.TooLarge:        http.StatusRequestEntityTooLarge,
	apperr.Unprocessable:   http.StatusUnprocessableEntity,
	apperr.Unavailable:     http.StatusServiceUnavailable,
	apperr.BadGateway:      http.StatusBadGateway,
	apperr.TooManyRequests: http.StatusTooManyRequests,
}

// writeError answers with the JSON error shape. Errors that are not
// *apperr.Error are internal: logged with their cause, answered generically.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := apperr.As(err)
	if !ok {
		e = apperr.Wrap(apperr.Internal, "internal", "internal error", err)
	}
	status := statusOf[e.Kind]
	id := requestid.From(r.Context())
	if status >= 500 {
		// The cause goes to the log, keyed by request id, never to the client.
		s.logger().ErrorContext(r.Context(), "request failed", "request_id", id, "code", e.Code, "cause", causeOf(e))
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	apperr.WriteJSON(w, status, e.Code, e.Message, id)
}

func causeOf(e *apperr.Error) string {
	if e.Err == nil {
		return ""
	}
	return errors.Unwrap(e).Error()
}
