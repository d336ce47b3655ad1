package bundle

import (
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// The etcd snapshot unit and script (docs/ETCD-SNAPSHOTS.md), installed
// with every bundle and started once the node is ready
// (exk8s-bootstrap-control-plane.sh). Every control-plane node asks; only
// the node k8sapi chose for a cluster's pending snapshot gets one to take.
const (
	SnapshotScript = binDir + "/exk8s-etcd-snapshot.sh"
	SnapshotTimer  = unitDir + "/exk8s-etcd-snapshot.timer"
)

// snapshotView is what the snapshot script needs to know: how it reaches
// the local etcd member as a client (the node's etcd client identity, the
// API server's, and the etcd CA) and where it keeps the snapshot until it
// is uploaded (beside etcd's data, on the same disk).
type snapshotView struct {
	Endpoint            string
	CACert, Cert, Key   string
	Dir                 string
	AskEveryMinutes     int
	TimeoutStartMinutes int
}

// SnapshotAskEvery is how often every control-plane node's snapshot timer
// asks whether it is to take one.
const SnapshotAskEvery = 5 * time.Minute

func newSnapshotView() snapshotView {
	return snapshotView{
		Endpoint: localEtcd,
		CACert:   CertPath(pki.EtcdCA), Cert: CertPath(pki.APIServerEtcdClient), Key: KeyPath(pki.APIServerEtcdClient),
		Dir: "/var/lib/exk8s/etcd-snapshots",
		// A pending snapshot waits at most this long for its node; the
		// upload URL (15 minutes) is asked for right before it is taken.
		AskEveryMinutes: int(SnapshotAskEvery / time.Minute),
		// etcd's largest keyspace (8 GiB) saved and uploaded on a slow
		// disk and link, well past the manager's 90 s default.
		TimeoutStartMinutes: 30,
	}
}

// snapshotPart installs the snapshot timer, service and script.
func snapshotPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(SnapshotTimer, "exk8s-etcd-snapshot.timer", modePublic, v),
		tmpl(unitDir+"/exk8s-etcd-snapshot.service", "exk8s-etcd-snapshot.service", modePublic, v),
		tmpl(SnapshotScript, "exk8s-etcd-snapshot.sh", modeScript, v),
	}
}
