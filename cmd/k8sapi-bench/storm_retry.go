package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
)

// answer is one attempt of a VM's call as its retry rule sees it.
type answer struct {
	status     int           // 0: no answer
	retryAfter time.Duration // the answer's Retry-After; 0 without one
	took       time.Duration
}

// answerOf reads resp (nil: no answer) and how long the attempt took.
func answerOf(resp *http.Response, took time.Duration) answer {
	a := answer{took: took}
	if resp != nil {
		a.status = resp.StatusCode
		a.retryAfter = retryAfter(resp.Header.Get("Retry-After"))
	}
	return a
}

// retryAfter is a Retry-After in seconds (the form internal/api writes);
// 0 when absent or in another form.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

func (a answer) ok() bool { return a.status/100 == 2 }

// transient is what curl's --retry tries again: no answer, 408, 429, 5xx.
func (a answer) transient() bool {
	return a.status == 0 || a.status == http.StatusRequestTimeout || a.status == http.StatusTooManyRequests || a.status >= 500
}

// retrier is one call's retries as the VM's shell library makes them
// (bundle.RetryOf): curl's own first, then the library's attempts.
type retrier struct {
	rule      bundle.CallRetry
	curlTries int           // curl's retries in this attempt
	curlSpent time.Duration // since this attempt's curl started
	attempts  int           // the library's attempts made
}

// next is the wait before trying again after the failed answer a, or
// false when the call gives up. curl waits its delay or the answer's
// Retry-After, whichever is longer, and gives up on a Retry-After that
// would end past its retry time (as curl's tool does); the library runs
// curl again Interval later whatever the answer said.
func (r *retrier) next(a answer) (time.Duration, bool) {
	r.curlSpent += a.took
	if a.transient() && r.curlTries < r.rule.Retries {
		wait := max(r.rule.RetryDelay, a.retryAfter)
		if r.rule.RetryMax == 0 || r.curlSpent+wait <= r.rule.RetryMax {
			r.curlTries++
			r.curlSpent += wait
			return wait, true
		}
	}
	r.attempts++
	if r.attempts >= r.rule.Attempts {
		return 0, false
	}
	r.curlTries, r.curlSpent = 0, 0
	return r.rule.Interval, true
}

// honours says whether waiting wait before the next try honours a's
// Retry-After (an answer without one asks for nothing).
func honours(a answer, wait time.Duration) bool { return wait >= a.retryAfter }
