// Command clusters is the ClustersFunction Lambda: GET /clusters,
// GET /clusters/{id}, DELETE /clusters/{id}, a node's bootstrap:
// GET /clusters/{id}/nodes/{vm_id}/bootstrap and
// POST /clusters/{id}/nodes/{vm_id}/rebootstrap, and the record of a
// cluster's admin kubeconfigs: GET /clusters/{id}/kubeconfigs, its audit
// trail, its etcd snapshots: POST and GET /clusters/{id}/etcd-snapshots,
// and its worker node pools: /clusters/{id}/node-pools[/{pool}].
package main

import (
	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/wiring"
)

func main() {
	// No KMS_KEY_ID: listing and reading never open sealed keys, and delete
	// destroys them by overwriting, so this function holds no KMS rights
	// and links no KMS client (its envelope refuses every call).
	// BOOTSTRAP_BASE_URL: a node pool's workers are born with the userdata shim.
	required := []string{"COMPUTE_API_URL", "DNS_API_URL", "BOOTSTRAP_BASE_URL"}
	wiring.Serve(api.ClustersFunction, required, func(app *wiring.App, srv *api.Server) error {
		// Deleting renders a VM's userdata: a VM whose create answer was
		// lost is found by repeating that create, byte for byte.
		r, err := bundle.NewFoundingRenderer()
		wiring.ServeClusters(srv, app.UseCases(r, app.ClosedEnvelope()))
		srv.Audit = app.Store // migration 014 grants it the insert
		srv.Nodes = app.Nodes()
		srv.Snapshots = &etcdsnapshot.Operator{Store: app.Store}
		return err
	})
}
