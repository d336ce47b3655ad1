package apperr

import "net/http"

// Kind classifies a failure for the client; the catalogue gives every code
// one, and the kind alone decides the HTTP status.
type Kind int

const (
	KindInternal             Kind = iota // a bug or an unexpected state
	KindInvalid                          // the request is wrong
	KindUnauthenticated                  // no valid credentials
	KindForbidden                        // valid credentials, not allowed
	KindNotFound                         // no such resource or route
	KindMethodNotAllowed                 // a known path, another method; Allow names the methods
	KindUnsupportedMediaType             // the body is declared as something k8sapi does not read
	KindConflict                         // the resource's state forbids this
	KindTooLarge                         // the body is over a limit
	KindUnavailable                      // a dependency (database, KMS) is down
	KindBadGateway                       // a platform API or a function failed
	KindUnprocessable                    // a well-formed request this deployment cannot carry out as configured
	KindTooManyRequests                  // the caller spent its budget; RetryAfter says when to come back
	kindCount
)

// statusOf is the one map from kinds to HTTP statuses.
var statusOf = [kindCount]int{
	KindInternal:             http.StatusInternalServerError,
	KindInvalid:              http.StatusBadRequest,
	KindUnauthenticated:      http.StatusUnauthorized,
	KindForbidden:            http.StatusForbidden,
	KindNotFound:             http.StatusNotFound,
	KindMethodNotAllowed:     http.StatusMethodNotAllowed,
	KindUnsupportedMediaType: http.StatusUnsupportedMediaType,
	KindConflict:             http.StatusConflict,
	KindTooLarge:             http.StatusRequestEntityTooLarge,
	KindUnavailable:          http.StatusServiceUnavailable,
	KindBadGateway:           http.StatusBadGateway,
	KindUnprocessable:        http.StatusUnprocessableEntity,
	KindTooManyRequests:      http.StatusTooManyRequests,
}

// Status is the HTTP status of k; a kind out of range is a 500.
func (k Kind) Status() int {
	if k < 0 || k >= kindCount {
		return http.StatusInternalServerError
	}
	return statusOf[k]
}
