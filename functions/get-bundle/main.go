// Command get-bundle is the GetBundleFunction Lambda, k8sapi's VM-facing
// function: GET /bootstrap/control-plane/{vm_id} (the bundle) and
// POST /bootstrap/control-plane/{vm_id}/status (the VM's bootstrap phase) and
// POST /bootstrap/control-plane/{vm_id}/renew (a ready node's certificates),
// GET and POST /bootstrap/control-plane/{vm_id}/etcd-snapshot (the chosen
// node's snapshot upload URL and its report), and a worker's
// GET /bootstrap/worker/{vm_id} (its bundle) and
// POST /bootstrap/worker/{vm_id}/csr (its kubelet's certificates), and
// every ready node's health report (POST .../health), and a shrinking
// control plane's removing member's etcd removals (GET and POST
// .../etcd-membership).
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
	"github.com/excloud/k8sapi/internal/nodehealth"
	"github.com/excloud/k8sapi/internal/progress"
	"github.com/excloud/k8sapi/internal/vmlimit"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	wiring.Serve(api.GetBundleFunction, []string{"KMS_KEY_ID", "ETCD_SNAPSHOT_BUCKET"}, func(app *wiring.App, srv *api.Server) error {
		r, err := bundle.NewBundleRenderer()
		nodes := app.NodeBootstrap(r)
		srv.Bundles, srv.Renewals, srv.EtcdCRLs, srv.EtcdMemberships, srv.Addons = nodes, nodes, nodes, nodes, nodes
		srv.Workers = &nodebootstrap.WorkerService{Service: nodes, Workers: app.Store}
		srv.Progress = &progress.Service{Store: app.Store}
		srv.Health = &nodehealth.Service{Store: app.Store}
		srv.Limits = &vmlimit.Limiter{Factor: app.Config.VMCallBudgetFactor}
		srv.SnapshotNodes = &etcdsnapshot.Node{Store: app.Store, Bucket: app.SnapshotBucket()}
		srv.Audit = app.Store // migration 016 grants it the insert (the snapshot routes' events)
		return err
	})
}
