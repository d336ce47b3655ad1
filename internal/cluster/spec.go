package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// KeepSpec serves PUT /clusters/{id}/spec: it keeps f as the cluster's
// file (so a plan is computed the same way from any machine) and sets the
// snapshot schedule f names. The operations f asks for are not started
// here: the CLI carries them out through their own routes. A file that
// differs from the cluster in what it keeps from its founding, or asks a
// count PATCH /clusters/{id} refuses, is refused: no operation could
// reach it.
func (s *Service) KeepSpec(ctx context.Context, org auth.Principal, id int64, f apitypes.ClusterFile) (apitypes.ClusterView, error) {
	if err := clusterspec.ValidateFile(f); err != nil {
		return apitypes.ClusterView{}, err
	}
	v, err := s.Get(ctx, org, id)
	if err != nil {
		return v, err
	}
	if err := clusterspec.Refused(f, v.Actual); err != nil {
		return v, err
	}
	interval, _ := clusterspec.SnapshotIntervalOf(f) // valid: checked above
	body, _ := json.Marshal(f)                       // plain fields cannot fail to marshal
	err = s.Store.SetClusterSpec(ctx, org.OrgID, id, body, int(interval/time.Second))
	switch {
	case errors.Is(err, store.ErrClusterNameTaken):
		return v, apperr.ClusterNameTaken.Detailf("name: another of the org's clusters is named %q", f.Name)
	case errors.Is(err, store.ErrNotFound):
		return v, apperr.NotFound.Detail("no such cluster")
	case err != nil:
		return v, usecase.DatabaseError(err)
	}
	return s.Get(ctx, org, id)
}
