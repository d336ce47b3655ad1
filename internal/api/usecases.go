package api

import (
	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The operator use cases each route function serves, over that function's
// dependencies: one place, for the functions' mains and the in-process
// stack alike.

// ServeFounding gives s CreateClusterFunction's use cases: founding, and
// the admin kubeconfigs it answers with.
func (s *Server) ServeFounding(d *usecase.Deps) {
	s.Founder, s.Kubeconfigs = &cluster.Service{Deps: d}, &adminkubeconfig.Service{Deps: d}
}

// ServeClusters gives s ClustersFunction's use cases: the clusters' reads,
// deletions and audit trails, the kubeconfig log, node pools and
// control-plane node replacements.
func (s *Server) ServeClusters(d *usecase.Deps) {
	clusters := &cluster.Service{Deps: d}
	s.Clusters, s.Events = clusters, clusters
	s.KubeconfigLog = &adminkubeconfig.Service{Deps: d}
	s.Pools = &nodepool.Service{Deps: d}
	s.Replacer = &controlplane.Service{Deps: d}
}
