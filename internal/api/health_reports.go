package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/nodehealth"
)

// reportHealth serves POST /bootstrap/control-plane/{vm_id}/health: a
// ready node reports that it is alive and what it sees (its kubelet, its
// etcd member, its API server's /readyz). The body is read only once the
// VM has proved itself.
func (s *Server) reportHealth(w http.ResponseWriter, r *http.Request) {
	recordHealth(s, w, r, s.Health.Report)
}

// reportWorkerHealth serves POST /bootstrap/worker/{vm_id}/health: a
// ready worker's report (its kubelet).
func (s *Server) reportWorkerHealth(w http.ResponseWriter, r *http.Request) {
	recordHealth(s, w, r, s.Health.ReportWorker)
}

// recordHealth records a health report. Its 204 tells the node what k8sapi
// asks of it, in headers: when a CA rotation asks the node for a phase it
// has not applied, bundle.RenewHeader, and the node's health script starts
// its renewal at once instead of at its daily timer; to a node the
// running upgrade retires, bundle.DrainHeader, the upgrade's drain bound,
// which its drain then applies (docs/UPGRADES.md); to the control-plane
// node a pending etcd snapshot was handed to, bundle.SnapshotHeader, and
// it takes the snapshot at once instead of at its snapshot timer's next
// ask (docs/ETCD-SNAPSHOTS.md).
func recordHealth(s *Server, w http.ResponseWriter, r *http.Request,
	record func(context.Context, auth.BootstrapVM, nodehealth.Report) (nodehealth.Answer, error)) {
	recordReport(s, w, r, func(ctx context.Context, vm auth.BootstrapVM, rep nodehealth.Report) error {
		a, err := record(ctx, vm, rep)
		if a.Renew {
			w.Header().Set(bundle.RenewHeader, bundle.RenewDue)
		}
		if a.DrainSeconds > 0 {
			w.Header().Set(bundle.DrainHeader, strconv.Itoa(a.DrainSeconds))
		}
		if a.Snapshot {
			w.Header().Set(bundle.SnapshotHeader, bundle.SnapshotDue)
		}
		return err
	})
}
