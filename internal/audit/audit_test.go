package audit

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestOutcomeOf(t *testing.T) {
	for status, want := range map[int]Outcome{200: Succeeded, 201: Succeeded, 202: Succeeded, 304: Succeeded,
		400: Refused, 404: Refused, 409: Refused, 429: Refused, 500: Failed, 503: Failed} {
		if got := OutcomeOf(status); got != want {
			t.Errorf("OutcomeOf(%d) = %s, want %s", status, got, want)
		}
	}
}

// A handler notes what it learnt; a request no token proved is named so;
// a request that is not audited has no note, and noting on it is a no-op.
func TestNote(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	ctx, n := WithNote(context.Background())
	if NoteFrom(ctx) != n {
		t.Fatal("the note is not the context's")
	}
	if e := n.Event("cluster.delete", "/clusters/4", "r-1", 401, at); e.Principal != Unauthenticated || e.Outcome != Refused || e.OrgID != 0 {
		t.Errorf("before authentication: %+v", e)
	}
	NoteFrom(ctx).Principal(7, "org:7:token:abc")
	NoteFrom(ctx).Cluster(4)
	want := Event{At: at, OrgID: 7, ClusterID: 4, Principal: "org:7:token:abc", Action: "cluster.delete",
		Resource: "/clusters/4", Outcome: Succeeded, Status: 200, RequestID: "r-1"}
	if e := n.Event("cluster.delete", "/clusters/4", "r-1", 200, at); !reflect.DeepEqual(e, want) {
		t.Errorf("got %+v, want %+v", e, want)
	}
	NoteFrom(context.Background()).Principal(1, "x") // not audited: no panic, nothing noted
	NoteFrom(context.Background()).Cluster(1)
	if VMPrincipal(7, 12) != "org:7:vm:12" {
		t.Errorf("VMPrincipal = %s", VMPrincipal(7, 12))
	}
}

// A handler that notes another action and what it changed records them
// in place of the route's action and beside it.
func TestNoteAsAndReason(t *testing.T) {
	_, n := WithNote(context.Background())
	n.As("cluster.set_remediation")
	n.Reason("unhealthy_after 0s → 1m0s")
	e := n.Event("cluster.scale_control_plane", "/clusters/4", "r-1", 200, time.Now())
	if e.Action != "cluster.set_remediation" || e.Reason != "unhealthy_after 0s → 1m0s" {
		t.Errorf("got %+v", e)
	}
	NoteFrom(context.Background()).Reason("x") // not audited: no panic
}

// A resource is the path escaped as a URL path and at most
// MaxResourceBytes: a NUL or a byte that is not UTF-8 is stored as its
// escape, a long path is cut with a mark and never through an escape
// (issue 43: such events were not stored at all).
func TestResource(t *testing.T) {
	a := func(n int) string { return "/" + strings.Repeat("a", n) }
	tail := "\x00" + strings.Repeat("x", 50)
	for path, want := range map[string]string{
		"/clusters/1":                  "/clusters/1",
		"/clusters/1/node-pools/x\x00": "/clusters/1/node-pools/x%00",
		"/clusters/1/node-pools/\xff":  "/clusters/1/node-pools/%FF",
		"/clusters/1/node-pools/é":     "/clusters/1/node-pools/%C3%A9",
		a(299):                         a(299),
		a(300):                         a(285) + truncatedMark,
		a(283) + tail:                  a(283) + truncatedMark, // the escape would start at the cut's last two bytes
		a(284) + tail:                  a(284) + truncatedMark,
		a(285) + tail:                  a(285) + truncatedMark,
		a(282) + tail:                  a(282) + "%00" + truncatedMark,
	} {
		got := Resource(path)
		if got != want || len(got) > MaxResourceBytes || strings.IndexByte(got, 0) >= 0 || !utf8.ValidString(got) {
			t.Errorf("Resource(%q) = %q (%d bytes), want %q", path, got, len(got), want)
		}
	}
}
