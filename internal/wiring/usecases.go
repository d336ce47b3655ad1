package wiring

import (
	"github.com/excloud/k8sapi/internal/adminkubeconfig"
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/carotation"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/controlplane"
	"github.com/excloud/k8sapi/internal/nodepool"
	"github.com/excloud/k8sapi/internal/trail"
	"github.com/excloud/k8sapi/internal/upgrade"
	"github.com/excloud/k8sapi/internal/usecase"
)

// The operator use cases each route function serves, over that function's
// dependencies: one place, for the functions' mains and the in-process
// stack alike. (Functions, not methods of api.Server: a function's binary
// links only the one its main calls, and every function is held to 12 MiB.)

// ServeFounding gives srv CreateClusterFunction's use cases: founding, and
// the admin kubeconfigs it answers with.
func ServeFounding(srv *api.Server, d *usecase.Deps) {
	srv.Founder, srv.Kubeconfigs = &cluster.Service{Deps: d}, &adminkubeconfig.Service{Deps: d}
}

// ServeClusters gives srv ClustersFunction's use cases: the clusters'
// reads and deletions, their audit trails, the kubeconfig log, node pools,
// control-plane node replacements, scalings and upgrades.
func ServeClusters(srv *api.Server, d *usecase.Deps) {
	srv.Clusters = &cluster.Service{Deps: d}
	srv.Events = &trail.Trail{Store: d.Store}
	srv.KubeconfigLog = &adminkubeconfig.Service{Deps: d}
	srv.Pools = &nodepool.Service{Deps: d}
	cp := &controlplane.Service{Deps: d}
	srv.Replacer, srv.Scaler = cp, cp
	srv.Upgrades = &upgrade.Service{Deps: d}
	srv.Rotations = &carotation.Service{Deps: d}
}
