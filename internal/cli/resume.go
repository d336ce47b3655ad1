package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// interrupted reports whether err ended a founding's call or wait without
// ending the founding: Ctrl-C, --timeout, a gateway's 502/503/504 or no
// answer at all. The founding is durable (the reconciler finishes it), so
// the operator needs its Idempotency-Key to follow it again, not a second
// cluster.
func interrupted(err error) bool {
	var api *APIError
	if errors.As(err, &api) {
		return gatewayCut(err)
	}
	var ended *waitEnded
	var noAnswer *url.Error
	return errors.As(err, &ended) || errors.As(err, &noAnswer) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// gatewayCut is a gateway's 502/503/504: the call was cut off, what it
// asked for may go on.
func gatewayCut(err error) bool {
	var api *APIError
	return errors.As(err, &api) && (api.Status == http.StatusBadGateway || api.Status == http.StatusServiceUnavailable || api.Status == http.StatusGatewayTimeout)
}

// isCode is an API error of code.
func isCode(err error, code string) bool {
	var api *APIError
	return errors.As(err, &api) && api.Code == code
}

// waitEnded is a wait given up (--timeout) or interrupted (Ctrl-C) while
// what it waited for goes on.
type waitEnded struct{ msg string }

func (e *waitEnded) Error() string { return e.msg }

// withResume adds to err, when it interrupted a founding, its
// Idempotency-Key and the command that follows it again: the same
// command with that key and --wait (a replay answers the founding's
// outcome and waits for its nodes). id is the cluster's, 0 if unknown.
func (a *app) withResume(err error, key string, id int64) error {
	if !interrupted(err) {
		return err
	}
	var ended *waitEnded
	if errors.Is(err, context.Canceled) && !errors.As(err, &ended) {
		err = errors.New("interrupted") // Ctrl-C mid-call: the URL and "context canceled" say less
	}
	hint := fmt.Sprintf("the founding goes on without this call (Idempotency-Key %s); follow it again with:\n  %s", key, a.resumeCommand(key))
	if id != 0 {
		hint += fmt.Sprintf("\nor look at it: k8sapi describe cluster %d", id)
	}
	return fmt.Errorf("%w\n%s", err, hint)
}

// resumeCommand is this run's command line with --idempotency-key key and
// --wait, quoted for a POSIX shell.
func (a *app) resumeCommand(key string) string {
	args := slices.Clone(a.args)
	if i := slices.IndexFunc(args, func(s string) bool { return s == "--idempotency-key" }); i >= 0 && i+1 < len(args) {
		args[i+1] = key
	} else if !slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, "--idempotency-key=") }) {
		args = append(args, "--idempotency-key", key)
	}
	if !slices.Contains(args, "--wait") {
		args = append(args, "--wait")
	}
	out := []string{"k8sapi"}
	for _, s := range args {
		out = append(out, shellQuote(s))
	}
	return strings.Join(out, " ")
}

// shellQuote is s as one word of a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
