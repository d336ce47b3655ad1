package carotation

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/keyring"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/usecase"
)

// Service begins, aborts and drives CA rotations.
type Service struct{ *usecase.Deps }

// DefaultDistrustWait is the longest lifetime of anything signed under an
// old root that a node does not renew: an admin kubeconfig lives at most
// 168 h (POST /clusters/{id}/kubeconfig's largest ttl), and a
// service-account token the API server issues by default lives an hour,
// a projected one at most as long as asked for (docs/CA-ROTATION.md).
const DefaultDistrustWait = 168 * time.Hour

// Rotate records a rotation of roots (API names; none: all) of one of
// org's active clusters; the reconciler drives it. Refused with nothing
// written: an unknown root (422, naming it), another operation of the
// cluster in progress (409).
func (s *Service) Rotate(ctx context.Context, org auth.Principal, clusterID int64, req apitypes.RotateCARequest) (apitypes.CARotation, error) {
	roots, err := rootIDs(req.Roots)
	if err != nil {
		return apitypes.CARotation{}, err
	}
	c, err := s.ActiveCluster(ctx, org, clusterID, "its CAs are rotated")
	if err != nil {
		return apitypes.CARotation{}, err
	}
	r, err := s.Store.BeginRotation(ctx, org.OrgID, c.ID, roots, cmp.Or(s.Settings.CADistrustWait, DefaultDistrustWait))
	return answer(c.ID, r, err)
}

// refusals is the one table of the store's refusals of a rotation's
// begin or abort, as the API answers them.
var refusals = []struct {
	err  error
	code apperr.Code
}{
	{store.ErrRotationBusy, apperr.OperationInProgress},
	{store.ErrClusterNotActive, apperr.ClusterNotActive},
	{store.ErrNotFound, apperr.NoCARotation},
	{store.ErrTooLateToAbort, apperr.CARotationPastDistrust},
}

// answer is rotation r of cluster id as the API shows it, or the answer
// to the store's err.
func answer(id int64, r store.Rotation, err error) (apitypes.CARotation, error) {
	if err == nil {
		return ViewOf(id, &r, nil), nil
	}
	for _, ref := range refusals {
		if errors.Is(err, ref.err) {
			return apitypes.CARotation{}, ref.code.New()
		}
	}
	return apitypes.CARotation{}, usecase.DatabaseError(err)
}

// Abort turns org's cluster's live rotation back, before its distrust.
func (s *Service) Abort(ctx context.Context, org auth.Principal, clusterID int64) (apitypes.CARotation, error) {
	c, err := s.ActiveCluster(ctx, org, clusterID, "its CA rotation is aborted")
	if err != nil {
		return apitypes.CARotation{}, err
	}
	r, err := s.Store.AbortRotation(ctx, org.OrgID, c.ID)
	return answer(c.ID, r, err)
}

// rootIDs are the rows' ids of the API's root names, in the table's
// order, every root when names is empty; unknown names are one 422 that
// names each.
func rootIDs(names []string) ([]string, error) {
	var unknown, out []string
	for _, n := range names {
		if !slices.ContainsFunc(keyring.Roots, func(r keyring.Root) bool { return r.Name == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, apperr.UnknownRoots.Detailf("roots: %s %s not a root k8sapi rotates (cluster, etcd, front-proxy, service-account); nothing was changed",
			strings.Join(unknown, ", "), map[bool]string{true: "is", false: "are"}[len(unknown) == 1])
	}
	for _, r := range keyring.Roots {
		if len(names) == 0 || slices.Contains(names, r.Name) {
			out = append(out, r.ID)
		}
	}
	return out, nil
}

// rootName is the API's name of a root's id.
func rootName(id string) string {
	for _, r := range keyring.Roots {
		if r.ID == id {
			return r.Name
		}
	}
	return id
}
