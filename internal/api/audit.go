package api

import (
	"context"
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/requestid"
)

// audited records a state-changing route's request (action != ""): the
// handler notes who called and on which cluster (audit.Note), and once it
// has answered, the event is logged and appended to the cluster's trail.
func (s *Server) audited(action string, next http.HandlerFunc) http.HandlerFunc {
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
		s.recordAudit(context.WithoutCancel(ctx), e)
	}
}

// recordAudit logs e, then appends it to its cluster's trail when an
// authenticated principal acted on a known cluster. The answer is already
// given: a failure to append is logged with the event, never answered.
func (s *Server) recordAudit(ctx context.Context, e audit.Event) {
	stored, err := false, error(nil)
	if s.Audit != nil && e.OrgID != 0 && e.ClusterID != 0 {
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

// noteVM records the proved VM as the principal.
func noteVM(r *http.Request, vm auth.BootstrapVM) {
	audit.NoteFrom(r.Context()).Principal(vm.OrgID, audit.VMPrincipal(vm.OrgID, vm.VMID))
}

// listEvents serves GET /clusters/{id}/events: the cluster's audit trail,
// newest first.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	org, id, ok := s.orgAndClusterID(w, r)
	if !ok {
		return
	}
	events, err := s.Events.AuditEvents(r.Context(), org, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events})
}
