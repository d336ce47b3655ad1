package store

import (
	"context"
	"fmt"
	"time"
)

// KubeconfigIssue is one recorded issue of an operator's admin kubeconfig
// (an admin_kubeconfigs row): what names the certificate, who asked and
// when; never the certificate or its key.
type KubeconfigIssue struct {
	ClusterID int64
	Serial    string // the certificate's serial number, lower-case hex
	IssuedAt  time.Time
	ExpiresAt time.Time // the certificate's NotAfter
	IssuedBy  string    // auth.Principal.Who
	RequestID string
}

// MaxKubeconfigIssuesShown bounds KubeconfigIssues (the newest).
const MaxKubeconfigIssuesShown = 100

// RecordKubeconfigIssue records one issue, only while its cluster is
// active: the cluster's row is locked for the insert, so a deletion that
// began meanwhile is seen, not raced. ErrNotFound: the cluster is not
// active (any more).
func (s *Store) RecordKubeconfigIssue(ctx context.Context, k KubeconfigIssue) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO admin_kubeconfigs (kube_cluster_id, serial, issued_at, expires_at, issued_by, request_id)
		SELECT id, $2, $3, $4, $5, $6 FROM kube_clusters WHERE id = $1 AND status = 'active' FOR SHARE`,
		k.ClusterID, k.Serial, k.IssuedAt, k.ExpiresAt, k.IssuedBy, k.RequestID)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("recording an admin kubeconfig of cluster %d: %w", k.ClusterID, err)
	}
	return nil
}

// KubeconfigIssues returns the newest recorded issues of one of org's
// clusters (of any status: the record outlives the cluster), newest first,
// in one round trip. ErrNotFound: no such cluster of org.
func (s *Store) KubeconfigIssues(ctx context.Context, orgID, clusterID int64) ([]KubeconfigIssue, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT a.serial, a.issued_at, a.expires_at, a.issued_by, a.request_id
		FROM kube_clusters k
		LEFT JOIN LATERAL (
			SELECT serial, issued_at, expires_at, issued_by, request_id FROM admin_kubeconfigs
			WHERE kube_cluster_id = k.id ORDER BY issued_at DESC, id DESC LIMIT $3
		) a ON true
		WHERE k.org_id = $1 AND k.id = $2`, orgID, clusterID, MaxKubeconfigIssuesShown)
	if err != nil {
		return nil, fmt.Errorf("listing admin kubeconfigs of cluster %d: %w", clusterID, err)
	}
	defer rows.Close()
	found, issues := false, []KubeconfigIssue{}
	for rows.Next() {
		found = true
		var serial, by, requestID *string
		var at, expires *time.Time
		if err := rows.Scan(&serial, &at, &expires, &by, &requestID); err != nil {
			return nil, fmt.Errorf("listing admin kubeconfigs of cluster %d: %w", clusterID, err)
		}
		if serial != nil { // the cluster's row alone: no issue recorded
			issues = append(issues, KubeconfigIssue{ClusterID: clusterID, Serial: *serial, IssuedAt: *at,
				ExpiresAt: *expires, IssuedBy: *by, RequestID: *requestID})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing admin kubeconfigs of cluster %d: %w", clusterID, err)
	}
	if !found {
		return nil, fmt.Errorf("listing admin kubeconfigs of cluster %d: %w", clusterID, ErrNotFound)
	}
	return issues, nil
}
