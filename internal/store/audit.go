package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/excloud/k8sapi/internal/audit"
)

// RecordAudit appends e to its cluster's trail when the cluster is the
// caller org's; otherwise (a probe of another org's cluster, a cluster
// that does not exist) it writes nothing: the log has the event. Reports
// whether a row was written.
func (s *Store) RecordAudit(ctx context.Context, e audit.Event) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO audit_events (kube_cluster_id, at, principal, action, resource, outcome, status, request_id, reason)
		SELECT id, $3, $4, $5, $6, $7, $8, $9, $10 FROM kube_clusters WHERE id = $1 AND org_id = $2`,
		e.ClusterID, e.OrgID, e.At, e.Principal, e.Action, e.Resource, string(e.Outcome), e.Status, e.RequestID, e.Reason)
	if err != nil {
		return false, fmt.Errorf("recording %s on cluster %d: %w", e.Action, e.ClusterID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AuditEventRow is one event of a trail with its row id, which a page's
// cursor names. AuditEvents reads it from JSON keyed 'ID' and by
// audit.Event's own names (the log record's).
type AuditEventRow struct {
	ID int64
	audit.Event
}

// EventQuery asks for a page of a trail: the events older than the one
// BeforeID names (0: from the newest), Limit of them at most.
type EventQuery struct {
	BeforeID int64
	Limit    int
}

// AuditEvents returns a page of one of org's clusters' events (of any
// status: the trail outlives the cluster), newest first (by time, then
// id), in one round trip. ErrNotFound: no such cluster of org. The rows
// come as one JSON array: each binary links this, and scanning seven
// nullable columns of a lateral join costs kilobytes of code a function
// held to 12 MiB lacks.
func (s *Store) AuditEvents(ctx context.Context, orgID, clusterID int64, q EventQuery) ([]AuditEventRow, error) {
	var list []byte
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE((
			SELECT json_agg(json_build_object('ID', id, 'at', at, 'org_id', k.org_id, 'cluster_id', k.id, 'principal', principal, 'action', action,
				'resource', resource, 'outcome', outcome, 'status', status, 'request_id', request_id, 'reason', reason) ORDER BY at DESC, id DESC)
			FROM (SELECT * FROM audit_events a WHERE a.kube_cluster_id = k.id
				AND ($3 = 0 OR (a.at, a.id) < (SELECT b.at, b.id FROM audit_events b WHERE b.id = $3 AND b.kube_cluster_id = k.id))
				ORDER BY at DESC, id DESC LIMIT $4) e
		), '[]')
		FROM kube_clusters k WHERE k.org_id = $1 AND k.id = $2`, orgID, clusterID, q.BeforeID, q.Limit).Scan(&list)
	events := []AuditEventRow{}
	if err == nil {
		err = json.Unmarshal(list, &events)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the audit events of cluster %d: %w", clusterID, notFound(err))
	}
	return events, nil
}
