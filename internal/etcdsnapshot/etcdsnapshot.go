// Package etcdsnapshot is the etcd snapshots use case (issue 26, part 1;
// docs/ETCD-SNAPSHOTS.md): which node takes a cluster's snapshot and when
// one is due (schedule.go), an operator's on-demand snapshot and the list
// (Operator), the chosen node's upload URL and report (Node), and the
// schedule the reconciler runs (Schedule).
//
// A snapshot is a row before it is an object: recorded pending, naming its
// node and its one object key; the node uploads through a presigned URL of
// that key only and reports size and SHA-256; k8sapi marks it uploaded
// once a HEAD of the key finds that size. Nothing is written when the
// object store cannot be reached.
package etcdsnapshot

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/objectstore"
	"github.com/excloud/k8sapi/internal/store"
)

// URLLifetime is how long a presigned upload URL works: the node asks for
// it right before it takes the snapshot, and a large etcd (8 GiB, its
// quota) snapshots and uploads well inside it.
const URLLifetime = 15 * time.Minute

// ReportDeadline is how long a pending snapshot waits for its node's
// report before the reconciler marks it failed (and the schedule may ask
// again).
const ReportDeadline = time.Hour

// ScheduledBy is requested_by of a snapshot the schedule asked for.
const ScheduledBy = "k8sapi:schedule"

// The parts of the store each use case reads and writes, one interface
// each: a function links only the queries of the use case it serves
// (GetBundleFunction's binary has little room: .ci/check-lambda-builds).

// OperatorStore is the operator's part.
type OperatorStore interface {
	SnapshotCluster(ctx context.Context, orgID, clusterID int64) (store.SnapshotCluster, error)
	RecordEtcdSnapshots(ctx context.Context, snaps []store.EtcdSnapshot) ([]store.EtcdSnapshot, error)
	EtcdSnapshots(ctx context.Context, orgID, clusterID int64) ([]store.EtcdSnapshot, error)
}

// NodeStore is the chosen node's part.
type NodeStore interface {
	PendingEtcdSnapshot(ctx context.Context, vmID, orgID, id int64) (store.EtcdSnapshot, error)
	FinishEtcdSnapshot(ctx context.Context, o store.SnapshotOutcome) (store.EtcdSnapshot, error)
	RestoreSourceOf(ctx context.Context, vmID, orgID int64) (store.RestoreSource, error)
}

// ScheduleStore is the schedule's part.
type ScheduleStore interface {
	DueSnapshotClusters(ctx context.Context, now time.Time) ([]store.SnapshotCluster, error)
	RecordEtcdSnapshots(ctx context.Context, snaps []store.EtcdSnapshot) ([]store.EtcdSnapshot, error)
	FailOverdueEtcdSnapshots(ctx context.Context, cutoff, at time.Time, why string) (int64, error)
}

var (
	_ OperatorStore = (*store.Store)(nil)
	_ NodeStore     = (*store.Store)(nil)
	_ ScheduleStore = (*store.Store)(nil)
)

// Bucket is the snapshots' bucket (objectstore.Bucket).
type Bucket interface {
	PresignPut(ctx context.Context, key string, lifetime time.Duration) (string, time.Time, error)
	PresignGet(ctx context.Context, key string, lifetime time.Duration) (string, time.Time, error)
	Size(ctx context.Context, key string) (int64, bool, error)
}

var _ Bucket = (*objectstore.Bucket)(nil)

func now(f func() time.Time) time.Time {
	if f != nil {
		return f().UTC()
	}
	return time.Now().UTC()
}

// Operator is the operator's side: POST and GET /clusters/{id}/etcd-snapshots.
type Operator struct {
	Store OperatorStore
	Now   func() time.Time
}

// Take records a pending on-demand snapshot of one of org's active
// clusters, taken by the node ChooseNode picks.
func (o *Operator) Take(ctx context.Context, org auth.Principal, clusterID int64, requestID string) (apitypes.EtcdSnapshot, error) {
	c, err := o.Store.SnapshotCluster(ctx, org.OrgID, clusterID)
	if err != nil {
		return apitypes.EtcdSnapshot{}, readError(err)
	}
	if c.Status != "active" {
		return apitypes.EtcdSnapshot{}, apperr.ClusterNotActive.Detail("the cluster is " + c.Status + "; only an active cluster takes snapshots")
	}
	if c.Pending {
		return apitypes.EtcdSnapshot{}, apperr.EtcdSnapshotInProgress.New()
	}
	vm, ok := ChooseNode(c.Nodes)
	if !ok {
		return apitypes.EtcdSnapshot{}, apperr.NoReadyNode.New()
	}
	made, err := o.Store.RecordEtcdSnapshots(ctx, []store.EtcdSnapshot{{ClusterID: c.ID, Trigger: store.SnapshotOnDemand,
		RequestedBy: org.Who(), RequestID: requestID, NodeVMID: vm, RequestedAt: now(o.Now)}})
	if err != nil {
		return apitypes.EtcdSnapshot{}, apperr.DatabaseUnavailable.Wrap(err)
	}
	if len(made) == 0 {
		// Another ask won since the read, or the cluster left active.
		return apitypes.EtcdSnapshot{}, apperr.EtcdSnapshotInProgress.New()
	}
	return viewOf(made[0]), nil
}

// List is one of org's clusters' snapshots, newest first.
func (o *Operator) List(ctx context.Context, org auth.Principal, clusterID int64) ([]apitypes.EtcdSnapshot, error) {
	rows, err := o.Store.EtcdSnapshots(ctx, org.OrgID, clusterID)
	if err != nil {
		return nil, readError(err)
	}
	list := make([]apitypes.EtcdSnapshot, len(rows))
	for i, r := range rows {
		list[i] = viewOf(r)
	}
	return list, nil
}

// viewOf is a snapshot's row as the API shows it, field by field: a
// column added to the row is not shown until it is added here.
func viewOf(r store.EtcdSnapshot) apitypes.EtcdSnapshot {
	return apitypes.EtcdSnapshot{ID: r.ID, ClusterID: r.ClusterID, Trigger: r.Trigger, RequestedBy: r.RequestedBy,
		RequestID: r.RequestID, NodeVMID: r.NodeVMID, ObjectKey: r.ObjectKey, State: r.State, SizeBytes: r.SizeBytes,
		SHA256: r.SHA256, Failure: r.Failure, RequestedAt: r.RequestedAt, FinishedAt: r.FinishedAt}
}

func readError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound.Detail("no such cluster")
	}
	return apperr.DatabaseUnavailable.Wrap(err)
}

// Node is the chosen node's side: GET and POST
// /bootstrap/control-plane/{vm_id}/etcd-snapshot.
type Node struct {
	Store  NodeStore
	Bucket Bucket
	Now    func() time.Time
}

// Upload is what the node is told to do: take snapshot ID and PUT it to
// URL before ExpiresAt.
type Upload struct {
	ID        int64     `json:"id"`
	ClusterID int64     `json:"cluster_id"`
	ObjectKey string    `json:"object_key"`
	UploadURL string    `json:"upload_url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Next is vm's pending snapshot with a fresh upload URL of its key; nil
// when vm has none to take.
func (n *Node) Next(ctx context.Context, vm auth.BootstrapVM) (*Upload, error) {
	snap, err := n.Store.PendingEtcdSnapshot(ctx, vm.VMID, vm.OrgID, 0)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.DatabaseUnavailable.Wrap(err)
	}
	url, expires, err := n.Bucket.PresignPut(ctx, snap.ObjectKey, URLLifetime)
	if err != nil {
		return nil, apperr.StorageUnavailable.Wrap(err)
	}
	return &Upload{ID: snap.ID, ClusterID: snap.ClusterID, ObjectKey: snap.ObjectKey, UploadURL: url, ExpiresAt: expires}, nil
}

// Report is the body of the node's report: the uploaded snapshot's size
// and SHA-256, or why it could not take or upload it.
type Report struct {
	ID        int64  `json:"id"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Error     string `json:"error,omitempty"`
}

// MaxErrorBytes bounds a reported failure.
const MaxErrorBytes = 1000

// isSHA256Hex: 64 lower-case hex digits.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// check says what is wrong with r, before anything is read.
func (r Report) check() error {
	switch {
	case r.ID <= 0:
		return apperr.InvalidField.Detail("id: is required, the snapshot's id as GET .../etcd-snapshot answered it")
	case r.Error != "":
		if len(r.Error) > MaxErrorBytes {
			return apperr.InvalidField.Detail("error: is over 1000 bytes")
		}
		if r.SizeBytes != 0 || r.SHA256 != "" {
			return apperr.InvalidField.Detail("error: a failure reports neither size_bytes nor sha256")
		}
	case r.SizeBytes <= 0:
		return apperr.InvalidField.Detail("size_bytes: must be a positive number of bytes")
	case !isSHA256Hex(r.SHA256):
		return apperr.InvalidField.Detail("sha256: must be 64 lower-case hex digits")
	}
	return nil
}

// Finish records vm's report on its pending snapshot. An upload is marked
// uploaded only when the object is at its key with the reported size; a
// mismatch or a missing object is refused and the snapshot stays pending
// (the node may upload again while its URL lives). A failure is recorded
// as reported. Once the snapshot is found, a refusal returns it as read
// (its cluster names the audit event).
func (n *Node) Finish(ctx context.Context, vm auth.BootstrapVM, r Report) (apitypes.EtcdSnapshot, error) {
	if err := r.check(); err != nil {
		return apitypes.EtcdSnapshot{}, err
	}
	snap, err := n.Store.PendingEtcdSnapshot(ctx, vm.VMID, vm.OrgID, r.ID)
	if errors.Is(err, store.ErrNotFound) {
		return apitypes.EtcdSnapshot{}, apperr.NotFound.Detail("no pending snapshot " + strconv.FormatInt(r.ID, 10) + " for this node")
	}
	if err != nil {
		return apitypes.EtcdSnapshot{}, apperr.DatabaseUnavailable.Wrap(err)
	}
	out := store.SnapshotOutcome{ID: snap.ID, VMID: vm.VMID, OrgID: vm.OrgID, At: now(n.Now)}
	if r.Error != "" {
		out.State, out.Failure = store.SnapshotFailed, r.Error
	} else {
		size, found, err := n.Bucket.Size(ctx, snap.ObjectKey)
		switch {
		case err != nil:
			return viewOf(snap), apperr.StorageUnavailable.Wrap(err)
		case !found:
			return viewOf(snap), apperr.SnapshotNotUploaded.Detail("no object at " + snap.ObjectKey + "; upload it to the URL first")
		case size != r.SizeBytes:
			return viewOf(snap), apperr.SnapshotSizeMismatch.Detailf("the object at %s is %d bytes, not the %d reported", snap.ObjectKey, size, r.SizeBytes)
		}
		out.State, out.SizeBytes, out.SHA256 = store.SnapshotUploaded, r.SizeBytes, r.SHA256
	}
	done, err := n.Store.FinishEtcdSnapshot(ctx, out)
	if errors.Is(err, store.ErrNotFound) {
		return viewOf(snap), apperr.NotFound.Detail("snapshot " + strconv.FormatInt(r.ID, 10) + " is no longer pending")
	}
	if err != nil {
		return viewOf(snap), apperr.DatabaseUnavailable.Wrap(err)
	}
	return viewOf(done), nil
}

// Download is where a restored cluster's node fetches the snapshot its
// etcd starts from, and what it must find there: URL GETs exactly the
// snapshot's object key until ExpiresAt.
type Download struct {
	ClusterID int64     `json:"-"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	SizeBytes int64     `json:"size_bytes"`
	SHA256    string    `json:"sha256"`
}

// Restore is the download of the snapshot vm's cluster was restored from
// (GET /bootstrap/control-plane/{vm_id}/etcd-restore); NotFound for a
// cluster founded empty.
func (n *Node) Restore(ctx context.Context, vm auth.BootstrapVM) (Download, error) {
	src, err := n.Store.RestoreSourceOf(ctx, vm.VMID, vm.OrgID)
	if errors.Is(err, store.ErrNotFound) {
		return Download{}, apperr.NotFound.Detail("this node's cluster was not restored from a snapshot")
	}
	if err != nil {
		return Download{}, apperr.DatabaseUnavailable.Wrap(err)
	}
	url, expires, err := n.Bucket.PresignGet(ctx, src.ObjectKey, URLLifetime)
	if err != nil {
		return Download{ClusterID: src.ClusterID}, apperr.StorageUnavailable.Wrap(err)
	}
	return Download{ClusterID: src.ClusterID, URL: url, ExpiresAt: expires, SizeBytes: src.SizeBytes, SHA256: src.SHA256}, nil
}
