// Package apperr is the one error convention between the use cases and the
// clients: the catalogue (catalogue.go) defines every code k8sapi answers,
// once, with its kind and the message a client is told by default; a kind
// decides the HTTP status (kind.go). A use case returns a catalogue code's
// error, with a detail where the client needs one (a field, a state); it
// never spells a code itself. Anything that is not an *Error is an internal
// error and its text never reaches a client.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Error is a failure the client may be told about.
type Error struct {
	Code    Code
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
	return e.Code.String() + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Kind is the kind of e's code.
func (e *Error) Kind() Kind { return e.Code.kind }

// Status is the HTTP status e is answered with.
func (e *Error) Status() int { return e.Code.kind.Status() }

// WithCause keeps cause for the logs, for an error that also carries a
// detail (Code.Wrap is the shorter way when the default message will do).
func (e *Error) WithCause(cause error) *Error {
	e.Err = cause
	return e
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
