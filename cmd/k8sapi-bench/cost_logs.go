package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// costLogs is the local stack's function output (devstack's FunctionOut:
// "LogicalID | line"), read as CloudWatch would ingest it: every line's
// bytes by function, each invocation's billed duration from its REPORT
// line, and each request's route, KMS calls and rows written from its
// access-log line, joined by Lambda's request id.
type costLogs struct {
	mu      sync.Mutex
	partial []byte
	phase   string
	invs    map[string]*invocation // by request id
	order   []string
	recon   map[string]*calls // reconciler runs by phase (its lines carry no request id)
	bytesOf map[string]int64  // log bytes by request id
}

type invocation struct {
	function, phase, route string
	billedMs, kms, rows    int64
	seenAccess             bool
}

func newCostLogs() *costLogs {
	return &costLogs{invs: map[string]*invocation{}, recon: map[string]*calls{}, bytesOf: map[string]int64{}}
}

func (l *costLogs) setPhase(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = p
}

func (l *costLogs) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// line takes one line of one function.
func (l *costLogs) line(s string) {
	fn, text, ok := strings.Cut(s, " | ")
	if !ok {
		return
	}
	size := int64(len(text) + 1)
	if fn == "ReconcilerFunction" {
		l.reconcilerLine(text, size)
		return
	}
	if id, billed, ok := parseReport(text); ok {
		inv := l.inv(id)
		inv.function, inv.phase, inv.billedMs = fn, l.phase, billed
	}
	if id := requestIDOf(text); id != "" {
		l.bytesOf[id] += size
		l.accessLine(id, text)
	}
}

func (l *costLogs) inv(id string) *invocation {
	inv := l.invs[id]
	if inv == nil {
		inv = &invocation{}
		l.invs[id] = inv
		l.order = append(l.order, id)
	}
	return inv
}

// accessLine is one request's route and counts (internal/api's "request" line).
func (l *costLogs) accessLine(id, text string) {
	var a struct {
		Msg   string `json:"msg"`
		Route string `json:"route"`
		KMS   int64  `json:"kms_calls"`
		Rows  int64  `json:"db_rows_written"`
	}
	if json.Unmarshal([]byte(text), &a) != nil || a.Msg != "request" {
		return
	}
	inv := l.inv(id)
	inv.route, inv.kms, inv.rows, inv.seenAccess = a.Route, a.KMS, a.Rows, true
}

// reconcilerLine adds the reconciler's lines to its phase's runs: a REPORT
// line is one run, its schedule line has the run's counts.
func (l *costLogs) reconcilerLine(text string, size int64) {
	c := l.recon[l.phase]
	if c == nil {
		c = &calls{}
		l.recon[l.phase] = c
	}
	c.logsB += size
	if _, billed, ok := parseReport(text); ok {
		c.n++
		c.billedMs += billed
		return
	}
	var a struct {
		Msg  string `json:"msg"`
		KMS  int64  `json:"kms_calls"`
		Rows int64  `json:"db_rows_written"`
	}
	if json.Unmarshal([]byte(text), &a) == nil && a.Msg == "etcd snapshot schedule" {
		c.kms += a.KMS
		c.rows += a.Rows
	}
}

// parseReport reads Lambda's REPORT line (lambdaruntime.ReportLine).
func parseReport(text string) (id string, billedMs int64, ok bool) {
	rest, ok := strings.CutPrefix(text, "REPORT RequestId: ")
	if !ok {
		return "", 0, false
	}
	id, rest, _ = strings.Cut(rest, "\t")
	_, after, found := strings.Cut(rest, "Billed Duration: ")
	if !found {
		return "", 0, false
	}
	num, _, _ := strings.Cut(after, " ms")
	n, err := strconv.ParseInt(num, 10, 64)
	return id, n, err == nil
}

// requestIDOf is the request id a line is about: the platform lines name
// it after "RequestId: ", a JSON line in its request_id field.
func requestIDOf(text string) string {
	for _, p := range []string{"START RequestId: ", "END RequestId: ", "REPORT RequestId: "} {
		if rest, ok := strings.CutPrefix(text, p); ok {
			id, _, _ := strings.Cut(strings.ReplaceAll(rest, "\t", " "), " ")
			return id
		}
	}
	var a struct {
		ID string `json:"request_id"`
	}
	if json.Unmarshal([]byte(text), &a) == nil {
		return a.ID
	}
	return ""
}

// byRoute sums the invocations of phase (every phase if "") by route.
func (l *costLogs) byRoute(phase string, memory map[string]int) map[string]*calls {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]*calls{}
	for _, id := range l.order {
		inv := l.invs[id]
		if !inv.seenAccess || inv.function == "" || (phase != "" && inv.phase != phase) {
			continue
		}
		c := out[inv.route]
		if c == nil {
			c = &calls{}
			out[inv.route] = c
		}
		c.add(calls{n: 1, billedMs: inv.billedMs, kms: inv.kms, rows: inv.rows, logsB: l.bytesOf[id], memoryMB: memory[inv.function], http: true})
	}
	return out
}

// reconciler is the reconciler's runs in phase.
func (l *costLogs) reconciler(phase string, memoryMB int) calls {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := calls{memoryMB: memoryMB}
	if r := l.recon[phase]; r != nil {
		c.add(*r)
	}
	return c
}
