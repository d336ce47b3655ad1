package cluster

import (
	"context"

	"github.com/excloud/k8sapi/internal/audit"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/usecase"
)

// AuditEvents lists the audit trail of one of org's clusters, newest first
// (store.MaxAuditEventsShown of them), of any status.
func (s *Service) AuditEvents(ctx context.Context, org auth.Principal, id int64) ([]audit.Event, error) {
	events, err := s.Store.AuditEvents(ctx, org.OrgID, id)
	return events, usecase.NoSuchCluster(err)
}
