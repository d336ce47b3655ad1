package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// An operator's refused requests with odd paths are kept in the trail
// like any other (they were logged "stored":false): a NUL in a pool's
// name, refused at the edge before anything read it, is kept with the
// operator named and the NUL escaped; a pool name making the path longer
// than 300 bytes (migration 014's bound) is kept cut to 300 bytes with a
// mark.
func TestTrailKeepsRefusedOddPaths(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()
	pools := "/clusters/" + itoa(id) + "/node-pools/"
	long := strings.Repeat("p", 400)
	for _, c := range []struct{ method, path, body, resource string }{
		{http.MethodPatch, pools + "x%00", `{"count":1}`, pools + "x%00"},
		{http.MethodDelete, pools + "x%00", "", pools + "x%00"},
		{http.MethodPatch, pools + long, `{"count":1}`, (pools + long)[:300-len("...(truncated)")] + "...(truncated)"},
	} {
		r := stacktest.Do(t, c.method, s.api.URL+c.path, c.body, s.Bearer(1))
		if r.Status != http.StatusBadRequest && r.Status != http.StatusNotFound {
			t.Fatalf("%s %.60s…: %d %s", c.method, c.path, r.Status, r.Body)
		}
		e := s.auditEvents(1, id)[0]
		if e.Resource != c.resource || e.Principal != who || e.Outcome != "refused" || e.Status != r.Status ||
			e.RequestID != r.Header.Get("X-Request-Id") {
			t.Errorf("%s %.60s…: the newest event is %+v, want it kept as %q by %s", c.method, c.path, e, c.resource, who)
		}
	}
}

// GET /clusters/{id}/events pages with a cursor as GET /clusters does:
// every event once, newest first across pages, the last page's cursor
// null; a cursor this API did not give and a bad limit are 400. It used
// to show the newest 100 and no more.
func TestEventsArePagedWithACursor(t *testing.T) {
	s := newStack(t)
	id := s.Found(1, stacktest.OneNode).ClusterID
	for range 6 {
		stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(id)+"/kubeconfig", `{"ttl":"1s"}`, s.Bearer(1))
	}
	all := s.auditEvents(1, id)
	if len(all) != 7 {
		t.Fatalf("%d events, want the founding and 6 refusals", len(all))
	}
	var paged []auditEvent
	cursor, pages := "", 0
	for {
		q := url.Values{"limit": {"3"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Events     []auditEvent `json:"events"`
			NextCursor *string      `json:"next_cursor"`
		}
		r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id)+"/events?"+q.Encode(), "", s.Bearer(1))
		r.JSON(t, &page)
		if r.Status != http.StatusOK || len(page.Events) > 3 {
			t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
		}
		paged, pages = append(paged, page.Events...), pages+1
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if pages != 3 || len(paged) != len(all) {
		t.Fatalf("%d pages of %d events, want 3 of %d", pages, len(paged), len(all))
	}
	for i := range all {
		if paged[i] != all[i] {
			t.Errorf("event %d: paged %+v, unpaged %+v", i, paged[i], all[i])
		}
	}
	for _, q := range []string{"cursor=bm90LWEtY3Vyc29y", "limit=0", "limit=201", "limit=x"} {
		r := stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(id)+"/events?"+q, "", s.Bearer(1))
		if r.Status != http.StatusBadRequest || r.ErrorCode(t) != "invalid_query" {
			t.Errorf("%s: %d %s, want 400 invalid_query", q, r.Status, r.Body)
		}
	}
}
