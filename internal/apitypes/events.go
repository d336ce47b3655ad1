package apitypes

import "time"

// AuditEvent is one event of a cluster's audit trail.
type AuditEvent struct {
	At        time.Time `json:"at"`
	OrgID     int64     `json:"org_id"`
	ClusterID int64     `json:"cluster_id"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Resource  string    `json:"resource"`
	Outcome   string    `json:"outcome"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
	// Reason says why k8sapi decided as it did by itself (node.remediate),
	// or what a request changed when its action alone does not say
	// (cluster.set_remediation: each old value and its new).
	Reason string `json:"reason,omitempty"`
}

// AuditEventList is one page of GET /clusters/{id}/events; NextCursor is
// nil on the last.
type AuditEventList struct {
	Events     []AuditEvent `json:"events"`
	NextCursor *string      `json:"next_cursor"`
}
