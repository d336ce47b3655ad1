package store

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/audit"
)

// MaxAuditEventsShown bounds GET /clusters/{id}/events: the newest ones.
const MaxAuditEventsShown = 100

// RecordAudit appends e to its cluster's trail when the cluster is the
// caller org's; otherwise (a probe of another org's cluster, a cluster
// that does not exist) it writes nothing: the log has the event. Reports
// whether a row was written.
func (s *Store) RecordAudit(ctx context.Context, e audit.Event) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO audit_events (kube_cluster_id, at, principal, action, resource, outcome, status, request_id)
		SELECT id, $3, $4, $5, $6, $7, $8, $9 FROM kube_clusters WHERE id = $1 AND org_id = $2`,
		e.ClusterID, e.OrgID, e.At, e.Principal, e.Action, e.Resource, string(e.Outcome), e.Status, e.RequestID)
	if err != nil {
		return false, fmt.Errorf("recording %s on cluster %d: %w", e.Action, e.ClusterID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AuditEvents returns the newest events of one of org's clusters (of any
// status: the trail outlives the cluster), newest first, in one round
// trip. ErrNotFound: no such cluster of org.
func (s *Store) AuditEvents(ctx context.Context, orgID, clusterID int64) ([]audit.Event, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT a.at, a.principal, a.action, a.resource, a.outcome, a.status, a.request_id
		FROM kube_clusters k
		LEFT JOIN LATERAL (
			SELECT at, principal, action, resource, outcome, status, request_id FROM audit_events
			WHERE kube_cluster_id = k.id ORDER BY at DESC, id DESC LIMIT $3
		) a ON true
		WHERE k.org_id = $1 AND k.id = $2`, orgID, clusterID, MaxAuditEventsShown)
	if err != nil {
		return nil, fmt.Errorf("listing the audit events of cluster %d: %w", clusterID, err)
	}
	defer rows.Close()
	found, events := false, []audit.Event{}
	for rows.Next() {
		found = true
		var r auditRow
		if err := rows.Scan(&r.at, &r.principal, &r.action, &r.resource, &r.outcome, &r.status, &r.requestID); err != nil {
			return nil, fmt.Errorf("listing the audit events of cluster %d: %w", clusterID, err)
		}
		if r.at != nil { // the cluster's row alone: no event recorded
			events = append(events, r.event(orgID, clusterID))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the audit events of cluster %d: %w", clusterID, err)
	}
	if !found {
		return nil, fmt.Errorf("listing the audit events of cluster %d: %w", clusterID, ErrNotFound)
	}
	return events, nil
}

// auditRow is one row of the lateral join: all NULL for a cluster with no
// event.
type auditRow struct {
	at                                              *time.Time
	principal, action, resource, outcome, requestID *string
	status                                          *int
}

func (r auditRow) event(orgID, clusterID int64) audit.Event {
	return audit.Event{At: *r.at, OrgID: orgID, ClusterID: clusterID, Principal: *r.principal, Action: *r.action,
		Resource: *r.resource, Outcome: audit.Outcome(*r.outcome), Status: *r.status, RequestID: *r.requestID}
}
