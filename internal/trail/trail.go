// Package trail is the audit trail's reading use case: a page of one of
// an org's clusters' events (GET /clusters/{id}/events), newest first,
// paged with k8sapi's one cursor (internal/paging) as the cluster list
// is. What an event is, and how a request becomes one, is internal/audit.
package trail

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/paging"
	"github.com/excloud/k8sapi/internal/store"
)

// Store reads a trail's rows.
type Store interface {
	AuditEvents(ctx context.Context, orgID, clusterID int64, q store.EventQuery) ([]store.AuditEventRow, error)
}

var _ Store = (*store.Store)(nil)

// Trail lists clusters' audit trails for their orgs.
type Trail struct{ Store Store }

// Query asks for one page: Cursor a page's NextCursor ("" the newest),
// Limit events at most (at least 1).
type Query struct {
	Cursor string
	Limit  int
}

// Events is the page of cluster id's trail q selects, for org.
func (t *Trail) Events(ctx context.Context, org auth.Principal, id int64, q Query) (apitypes.AuditEventList, error) {
	sq := store.EventQuery{Limit: q.Limit + 1} // one more: is there a next page
	var err error
	if sq.BeforeID, err = paging.After(q.Cursor); err != nil {
		return apitypes.AuditEventList{}, err
	}
	rows, err := t.Store.AuditEvents(ctx, org.OrgID, id, sq)
	if errors.Is(err, store.ErrNotFound) {
		return apitypes.AuditEventList{}, apperr.NotFound.Detail("no such cluster")
	}
	if err != nil {
		return apitypes.AuditEventList{}, apperr.DatabaseUnavailable.Wrap(err)
	}
	rows, next := paging.Cut(rows, q.Limit, func(r store.AuditEventRow) int64 { return r.ID })
	return apitypes.AuditEventList{Events: eventsOf(rows), NextCursor: next}, nil
}

// eventsOf are a trail's rows as the API shows them: every field of the
// event, none of the row's id (a page's cursor carries it).
func eventsOf(rows []store.AuditEventRow) []apitypes.AuditEvent {
	out := make([]apitypes.AuditEvent, len(rows))
	for i, r := range rows {
		e := r.Event
		out[i] = apitypes.AuditEvent{At: e.At, OrgID: e.OrgID, ClusterID: e.ClusterID, Principal: e.Principal, Action: e.Action,
			Resource: e.Resource, Outcome: string(e.Outcome), Status: e.Status, RequestID: e.RequestID, Reason: e.Reason}
	}
	return out
}
