package integration

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/stacktest"
)

// auditEvent is one item of GET /clusters/{id}/events.
type auditEvent = apitypes.AuditEvent

// auditLine is an "audit" record of the functions' log: the event as the
// API lists it, and whether the cluster's trail stored it.
type auditLine struct {
	Msg   string `json:"msg"`
	Audit struct {
		auditEvent
		OrgID     int64 `json:"org_id"`
		ClusterID int64 `json:"cluster_id"`
	} `json:"audit"`
	Stored bool `json:"stored"`
}

// Every state-changing request an operator makes on a cluster, whatever
// its outcome, is one event of the cluster's trail, newest first, naming
// who, what, where and how it ended, with the request's id; another org's
// request on it is logged but never shown to the cluster's org, and
// another org cannot read the trail.
func TestAuditTrail(t *testing.T) {
	s := newStack(t)
	res := s.Found(1, stacktest.ThreeNodes)
	id, vm := res.ClusterID, res.ControlPlaneVMIDs[0]
	who := auth.NewPrincipal(1, 0, s.Token(1)).Who()
	base := "/clusters/" + itoa(id)
	type step struct {
		org          int64
		method, path string
		body         string
		status       int
		action       string
	}
	steps := []step{
		{1, http.MethodPost, base + "/kubeconfig", "", http.StatusCreated, "kubeconfig.issue"},
		{1, http.MethodPost, base + "/kubeconfig", `{"ttl":"1s"}`, http.StatusBadRequest, "kubeconfig.issue"},
		{1, http.MethodPost, base + "/nodes/" + itoa(vm) + "/rebootstrap", "", http.StatusOK, "node.rebootstrap"},
		{2, http.MethodDelete, base, "", http.StatusNotFound, "cluster.delete"}, // another org: logged only
		{1, http.MethodDelete, base, "", http.StatusOK, "cluster.delete"},
		{1, http.MethodPost, base + "/kubeconfig", "", http.StatusConflict, "kubeconfig.issue"},
	}
	var want []auditEvent // newest first
	for _, st := range steps {
		r := stacktest.Do(t, st.method, s.api.URL+st.path, st.body, s.Bearer(st.org))
		if r.Status != st.status {
			t.Fatalf("%s %s = %d %s, want %d", st.method, st.path, r.Status, r.Body, st.status)
		}
		if st.org == 1 {
			want = append([]auditEvent{{Principal: who, Action: st.action, Resource: st.path, Outcome: outcomeOf(st.status),
				Status: st.status, RequestID: r.Header.Get("X-Request-Id")}}, want...)
		}
	}
	want = append(want, auditEvent{Principal: who, Action: "cluster.create", Resource: "/clusters", Outcome: "succeeded", Status: http.StatusCreated})
	for i := range want {
		want[i].OrgID, want[i].ClusterID = 1, id
	}

	got := s.auditEvents(1, id)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i, e := range got {
		w := want[i]
		w.At = e.At
		if w.RequestID == "" { // the founding's: its id is not the helper's to return
			w.RequestID = e.RequestID
		}
		if e != w || e.RequestID == "" || e.At.IsZero() {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
		if i > 0 && e.At.After(got[i-1].At) {
			t.Errorf("event %d is newer than the one before it", i)
		}
	}
	if r := stacktest.Do(t, http.MethodGet, s.api.URL+base+"/events", "", s.Bearer(2)); r.Status != http.StatusNotFound {
		t.Errorf("another org reads the trail: %d %s", r.Status, r.Body)
	}
	s.checkAuditLog(t, len(steps)+1, auth.NewPrincipal(2, 0, s.Token(2)).Who())
}

func outcomeOf(status int) string {
	switch {
	case status >= 500:
		return "failed"
	case status >= 400:
		return "refused"
	}
	return "succeeded"
}

// checkAuditLog: one "audit" log record per state-changing request, each
// with every field; the other org's probe is there, not stored.
func (s *stack) checkAuditLog(t *testing.T, want int, other string) {
	var lines []auditLine
	sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l auditLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "audit" {
			lines = append(lines, l)
		}
	}
	if len(lines) != want {
		t.Fatalf("%d audit log records, want %d", len(lines), want)
	}
	probed := false
	for _, l := range lines {
		a := l.Audit
		if a.At.IsZero() || a.Principal == "" || a.OrgID == 0 || a.ClusterID == 0 || a.Action == "" || a.Resource == "" || a.Outcome == "" || a.Status == 0 || a.RequestID == "" {
			t.Errorf("audit record lacks a field: %+v", l)
		}
		if a.Principal == other {
			probed = true
			if l.Stored || a.Outcome != "refused" || a.OrgID != 2 {
				t.Errorf("the other org's probe: %+v, want refused, not stored", l)
			}
		}
	}
	if !probed {
		t.Error("the other org's probe is not in the log")
	}
}

// auditEvents lists cluster id's trail as org's operator.
func (s *stack) auditEvents(org, id int64) []auditEvent {
	s.t.Helper()
	path := "/clusters/" + itoa(id) + "/events"
	r := stacktest.Do(s.t, http.MethodGet, s.api.URL+path, "", s.Bearer(org))
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET %s = %d %s", path, r.Status, r.Body)
	}
	var list struct {
		Events []auditEvent `json:"events"`
	}
	r.JSON(s.t, &list)
	return list.Events
}
