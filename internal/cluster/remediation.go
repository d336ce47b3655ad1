package cluster

import (
	"context"
	"errors"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// SetRemediation changes the remediation settings ch gives of one of
// org's active clusters (PATCH /clusters/{id}): the reconciler reads them
// on its next sweep. It is the cluster as GET /clusters/{id} shows it and
// the change as the trail keeps it (each old value and its new).
func (s *Service) SetRemediation(ctx context.Context, org auth.Principal, id int64, ch clusterspec.RemediationChange) (apitypes.ClusterView, string, error) {
	if _, err := s.ActiveCluster(ctx, org, id, "its remediation settings change"); err != nil {
		return apitypes.ClusterView{}, "", err
	}
	old, err := s.Store.SetRemediation(ctx, org.OrgID, id, ch.UnhealthyAfterSeconds, ch.MaxUnhealthyPercent)
	if errors.Is(err, store.ErrClusterNotActive) {
		return apitypes.ClusterView{}, "", apperr.ClusterNotActive.New()
	}
	if err != nil {
		return apitypes.ClusterView{}, "", usecase.NoSuchCluster(err)
	}
	v, err := s.Get(ctx, org, id)
	return v, ch.Describe(old.UnhealthyAfterSeconds, old.MaxUnhealthyPercent), err
}
