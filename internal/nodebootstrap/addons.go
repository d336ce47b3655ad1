package nodebootstrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/store"
)

// The addons route (docs/UPGRADES.md, "The order"): while an upgrade's
// addons step is due, the control-plane node it chose (and recorded)
// asks every minute (exk8s-upgrade-addons.timer) and is answered the
// cluster addons rendered at the pass's release, by the renderer its
// bundle's manifests come from; it applies them and reports. Every other
// node is answered nothing. The route opens no key.

// AddonSteps reads and records what the route serves.
type AddonSteps interface {
	AddonsAskOf(ctx context.Context, vmID, orgID int64) (store.AddonsAsk, error)
	RecordAddonsReport(ctx context.Context, a store.AddonsAsk, failure string) error
}

var _ AddonSteps = (*store.Store)(nil)

// MaxAddonsFailureBytes bounds a reported failure (the column's check).
const MaxAddonsFailureBytes = 512

// AddonsAnswer is the GET's answer: the manifests to apply, in order, at
// the pass's release.
type AddonsAnswer struct {
	ClusterID         int64          `json:"cluster_id"`
	UpgradeID         int64          `json:"upgrade_id"`
	KubernetesVersion string         `json:"kubernetes_version"`
	Manifests         []bundle.Addon `json:"manifests"`
}

// AddonsReport is the POST's body (the version applied, or the failure)
// and answer (with the cluster and whether the step took it as applied).
type AddonsReport struct {
	ClusterID         int64  `json:"cluster_id,omitempty"`
	KubernetesVersion string `json:"kubernetes_version"`
	Failure           string `json:"failure"`
	Applied           bool   `json:"applied"`
}

// Addons is what vm applies: nil (the route's 204) unless vm's node is
// the one an upgrade's due addons step chose.
func (s *Service) Addons(ctx context.Context, vm auth.BootstrapVM) (*AddonsAnswer, error) {
	a, err := s.Steps.AddonsAskOf(ctx, vm.VMID, vm.OrgID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, databaseError(err)
	case !a.Due():
		return nil, nil
	}
	t, err := s.load(ctx, vm)
	if err != nil {
		return nil, err
	}
	t.cluster.KubernetesVersion = a.PassVersion
	set, err := s.artifacts(t.row, t.cluster)
	if err != nil {
		return nil, err
	}
	manifests, err := s.Renderer.Addons(t.cluster, set)
	if err != nil {
		return nil, err
	}
	return &AddonsAnswer{ClusterID: a.ClusterID, UpgradeID: a.UpgradeID, KubernetesVersion: a.PassVersion, Manifests: manifests}, nil
}

// ReportAddons records vm's report of the addons it was answered: only
// from the chosen node, only of the pass's version (404 otherwise,
// nothing written). A success reported again is taken again.
func (s *Service) ReportAddons(ctx context.Context, vm auth.BootstrapVM, r AddonsReport) (AddonsReport, error) {
	if err := r.check(); err != nil {
		return r, err
	}
	a, err := s.Steps.AddonsAskOf(ctx, vm.VMID, vm.OrgID)
	if err == nil && a.PassVersion != r.KubernetesVersion {
		err = store.ErrNotFound
	}
	if err == nil {
		err = s.Steps.RecordAddonsReport(ctx, a, r.Failure)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return r, notFound(fmt.Sprintf("addons step at %s", r.KubernetesVersion))
	case err != nil:
		return r, databaseError(err)
	}
	r.ClusterID, r.Applied = a.ClusterID, r.Failure == ""
	return r, nil
}

func (r AddonsReport) check() error {
	switch {
	case r.KubernetesVersion == "":
		return apperr.InvalidField.Detail("kubernetes_version: is required, the version GET .../addons answered")
	case len(r.Failure) > MaxAddonsFailureBytes:
		return apperr.InvalidField.Detailf("failure: at most %d bytes", MaxAddonsFailureBytes)
	}
	return nil
}
