// Package apperr is the one error convention between the use cases and the
// HTTP layer: a use case says what kind of failure happened and what the
// client may be told; internal/api alone maps kinds to statuses. Anything
// that is not an *Error is an internal error and its text never reaches a
// client.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a failure for the client.
type Kind int

const (
	Internal        Kind = iota // 500: a bug or an unexpected state
	Invalid                     // 400: the request is wrong
	Unauthenticated             // 401: no valid credentials
	Forbidden                   // 403: valid credentials, not allowed
	NotFound                    // 404
	Conflict                    // 409: the resource's state forbids this
	TooLarge                    // 413
	Unavailable                 // 503: a dependency (database, KMS) is down
	BadGateway                  // 502: a platform API failed
	Unprocessable               // 422: a well-formed request this deployment cannot carry out as configured
	TooManyRequests             // 429: the caller spent its budget; RetryAfter says when to come back
)

// Error is a failure the client may be told about.
type Error struct {
	Kind    Kind
	Code    string // machine-readable, e.g. "invalid_request"
	Message string // safe for the client
	Err     error  // the cause, for logs only
	// RetryAfter, when positive, is when the client may try again
	// (answered as a Retry-After header, in whole seconds, rounded up).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error of kind with a client-safe message.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Wrap returns an Error of kind that keeps cause for the logs.
func Wrap(kind Kind, code, message string, cause error) *Error {
	return &Error{Kind: kind, Code: code, Message: message, Err: cause}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
