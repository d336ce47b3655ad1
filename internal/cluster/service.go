package cluster

import (
	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/usecase"
	"github.com/excloud/k8sapi/internal/vm"
)

// Service founds, lists, reads, deletes and restores an org's clusters.
type Service struct{ *usecase.Deps }

func (s *Service) vms() vm.Maker { return vm.Maker{Deps: s.Deps} }

func (s *Service) controlPlane() *controlplane.Service { return &controlplane.Service{Deps: s.Deps} }

func (s *Service) kubeconfigs() *adminkubeconfig.Service {
	return &adminkubeconfig.Service{Deps: s.Deps}
}
