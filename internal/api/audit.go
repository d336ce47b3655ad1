package api

import (
	"context"
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/requestid"
	"github.com/excloud/k8sapi/internal/trail"
)

// audited records a state-changing route's request (route.Audit != ""):
// the handler notes who called and on which cluster (audit.Note), and once
// it has answered, the event is logged and, for a route of the trail,
// appended to the cluster's trail.
func (s *Server) audited(route Route, next http.HandlerFunc) http.HandlerFunc {
	action := route.Audit
	if action == "" {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, note := audit.WithNote(r.Context())
		if id, ok := ParseID(r.PathValue("id")); ok {
			note.Cluster(id)
		}
		rec := &statusRecorder{ResponseWriter: w}
		next(rec, r.WithContext(ctx))
		e := note.Event(action, r.URL.Path, requestid.From(ctx), rec.status, time.Now().UTC())
		s.recordAudit(context.WithoutCancel(ctx), e, route.Trail)
	}
}

// recordAudit logs e, then appends it to its cluster's trail (kept) when an
// authenticated principal acted on a known cluster. The answer is already
// given: a failure to append is logged with the event, never answered.
func (s *Server) recordAudit(ctx context.Context, e audit.Event, kept bool) {
	stored, err := false, error(nil)
	if s.Audit != nil && kept && e.OrgID != 0 && e.ClusterID != 0 {
		stored, err = s.Audit.RecordAudit(ctx, e)
	}
	// request_id also at the top, as every log line of a request has it.
	if err != nil {
		s.logger().ErrorContext(ctx, "audit", "request_id", e.RequestID, "audit", e, "stored", false, "error", err.Error())
		return
	}
	s.logger().InfoContext(ctx, "audit", "request_id", e.RequestID, "audit", e, "stored", stored)
}

// noteOperator records the authenticated operator in the request's audit
// note (a no-op on a route that is not audited).
func noteOperator(r *http.Request, org auth.Principal) {
	audit.NoteFrom(r.Context()).Principal(org.OrgID, org.Who())
}

// noteRefusedOperator names the operator of a request the edge refused
// (screened) before anything authenticated it, once the refusal is
// answered: so the trail keeps an operator's refused request too. Only on
// an audited route, and only a valid operator's token is believed.
func (s *Server) noteRefusedOperator(r *http.Request) {
	if audit.NoteFrom(r.Context()) == nil || s.Auth == nil {
		return
	}
	if org, err := s.Auth.Operator(r.Context(), r.Header.Get("Authorization")); err == nil {
		noteOperator(r, org)
	}
}

// noteVM records the proved VM as the principal.
func noteVM(r *http.Request, vm auth.BootstrapVM) {
	audit.NoteFrom(r.Context()).Principal(vm.OrgID, audit.VMPrincipal(vm.OrgID, vm.VMID))
}

// Page sizes of GET /clusters/{id}/events: the newest 100 by default, as
// the trail showed before it paged.
const (
	DefaultEventsLimit = 100
	MaxEventsLimit     = 200
)

// listEvents serves GET /clusters/{id}/events: a page of the cluster's
// audit trail, newest first, and the cursor of the next.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	cursor, limit, err := pageQuery(r, DefaultEventsLimit, MaxEventsLimit)
	var page apitypes.AuditEventList
	if err == nil {
		page, err = s.Events.Events(r.Context(), org, id, trail.Query{Cursor: cursor, Limit: limit})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
