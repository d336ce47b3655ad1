package apitypes

import "time"

// EtcdSnapshot is one etcd snapshot: an item of
// GET /clusters/{id}/etcd-snapshots, the answer of POST and of the node's
// report.
type EtcdSnapshot struct {
	ID          int64      `json:"id"`
	ClusterID   int64      `json:"cluster_id"`
	Trigger     string     `json:"trigger"`      // scheduled, on_demand
	RequestedBy string     `json:"requested_by"` // who asked, or the schedule
	RequestID   string     `json:"request_id"`
	NodeVMID    int64      `json:"node_vm_id"` // the node that takes it
	ObjectKey   string     `json:"object_key"`
	State       string     `json:"state"`
	SizeBytes   *int64     `json:"size_bytes"`
	SHA256      *string    `json:"sha256"`
	Failure     *string    `json:"failure"`
	RequestedAt time.Time  `json:"requested_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

// EtcdSnapshotList is GET /clusters/{id}/etcd-snapshots, newest first.
type EtcdSnapshotList struct {
	Snapshots []EtcdSnapshot `json:"snapshots"`
}
