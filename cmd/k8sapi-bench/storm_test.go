package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
)

func TestArrivalsSpreadEvenlyOverTheMinute(t *testing.T) {
	at := arrivals(4, time.Minute)
	want := []time.Duration{0, 15 * time.Second, 30 * time.Second, 45 * time.Second}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("arrivals(4, 1m) = %v, want %v", at, want)
		}
	}
	if got := arrivals(1000, time.Minute); got[999] >= time.Minute || got[1] != 60*time.Millisecond {
		t.Errorf("1000 arrivals: second at %v, last at %v; want 60ms and before the minute ends", got[1], got[999])
	}
}

func rule(t *testing.T, kind string) bundle.CallRetry {
	t.Helper()
	r, ok := bundle.RetryOf(kind)
	if !ok {
		t.Fatalf("no retry rule for %s", kind)
	}
	return r
}

// A report is retried by curl, which waits the longer of its delay and
// the answer's Retry-After, and gives up on one that ends past its retry
// time; it never runs curl again (one attempt).
func TestReportRetryHonoursRetryAfter(t *testing.T) {
	r := &retrier{rule: rule(t, "report")}
	throttled := answer{status: http.StatusTooManyRequests, retryAfter: 7 * time.Second}
	if wait, again := r.next(throttled); !again || wait != 7*time.Second || !honours(throttled, wait) {
		t.Errorf("429 with Retry-After 7: wait %v again %v, want 7s", wait, again)
	}
	if wait, again := r.next(answer{status: http.StatusServiceUnavailable}); !again || wait != 2*time.Second {
		t.Errorf("503 without Retry-After: wait %v again %v, want curl's delay of 2s", wait, again)
	}
	if _, again := r.next(answer{status: http.StatusTooManyRequests, retryAfter: 15 * time.Second}); again {
		t.Error("a Retry-After past curl's retry time of 20s was waited for; curl gives up")
	}
	if _, again := (&retrier{rule: rule(t, "report")}).next(answer{status: http.StatusForbidden}); again {
		t.Error("a 403 report was retried")
	}
}

// The bundle fetch is the library's: every 5 s whatever the answer said,
// so a Retry-After longer than 5 s is not honoured.
func TestFetchRetryIsEveryFiveSeconds(t *testing.T) {
	r := &retrier{rule: rule(t, "boot")}
	short := answer{status: http.StatusTooManyRequests, retryAfter: 3 * time.Second}
	if wait, again := r.next(short); !again || wait != 5*time.Second || !honours(short, wait) {
		t.Errorf("429 with Retry-After 3: wait %v again %v, want 5s", wait, again)
	}
	long := answer{status: http.StatusTooManyRequests, retryAfter: time.Minute}
	if wait, _ := r.next(long); honours(long, wait) {
		t.Errorf("a wait of %v honours a Retry-After of a minute", wait)
	}
	for range 117 {
		r.next(answer{})
	}
	if _, again := r.next(answer{}); again {
		t.Error("the fetch was tried more than its 120 attempts")
	}
}

func TestRetryAfterReadsSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "12": 12 * time.Second, "-1": 0, "Wed, 21 Oct 2015 07:28:00 GMT": 0} {
		if got := retryAfter(in); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func stormOf(fetch, report []time.Duration, statuses map[int]int) *stormRun {
	row := func(what string, ds []time.Duration) *loadRow {
		l := &loadRow{what: what}
		for _, d := range ds {
			l.samples = append(l.samples, sample{d: d})
		}
		return l
	}
	return &stormRun{vms: 2, clusters: 1, spread: time.Minute, statuses: statuses,
		fetch: row("GET bundle", fetch), report: row("POST status", report)}
}

func TestStormClosingLineAndStatuses(t *testing.T) {
	s := stormOf([]time.Duration{10 * time.Millisecond, 30 * time.Millisecond},
		[]time.Duration{5 * time.Millisecond, 80 * time.Millisecond}, map[int]int{503: 1, 429: 2, 0: 1})
	if got, want := s.closingLine(), "fleet: boot storm of 2 VMs: p99 80.0 ms, 2 5xx\n"; got != want {
		t.Errorf("closing line %q, want %q", got, want)
	}
	if got, want := s.statusList(), "no answer×1, 429×2, 503×1"; got != want {
		t.Errorf("statuses %q, want %q", got, want)
	}
	if got := (*stormRun)(nil).closingLine(); !strings.Contains(got, "not measured") {
		t.Errorf("no storm: %q", got)
	}
}

func TestStormBudgetsFailOnA5xxOrASlowRoute(t *testing.T) {
	ok := stormOf([]time.Duration{time.Millisecond}, []time.Duration{time.Millisecond}, map[int]int{})
	for _, b := range ok.budgets() {
		if !b.pass {
			t.Errorf("%s: %s fails a storm with nothing wrong", b.what, b.measured)
		}
	}
	bad := stormOf([]time.Duration{time.Second}, []time.Duration{time.Millisecond}, map[int]int{500: 1})
	if bs := bad.budgets(); bs[0].pass || bs[1].pass {
		t.Errorf("a 1 s p99 and a 500 pass: %+v", bs[:2])
	}
}
