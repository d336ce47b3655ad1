package bundle

import "github.com/excloud/k8sapi/internal/clusterfacts"

// EtcdRestoreScript starts a restored cluster's etcd member from the
// snapshot the cluster was restored from (docs/ETCD-SNAPSHOTS.md, "Restore").
const EtcdRestoreScript = binDir + "/exk8s-etcd-restore.sh"

// etcdDataDir is etcd's --data-dir (etcd.service).
const etcdDataDir = "/var/lib/etcd"

// etcdRestoreView is what a restored cluster's node needs to restore its
// member: where etcd keeps its data and its own peer URL (its name, the
// initial cluster and the token are the view's, as etcd.service has them:
// etcd checks the restored membership against its flags).
type etcdRestoreView struct {
	Script  string
	DataDir string
	PeerURL string
}

// newEtcdRestoreView is nil unless the cluster was restored. A node made by
// a replacement restores nothing: it joins the running etcd, whose data
// came from the snapshot already.
func newEtcdRestoreView(c clusterfacts.Cluster, t topology) *etcdRestoreView {
	if !c.Restored || t.self.Joins {
		return nil
	}
	return &etcdRestoreView{Script: EtcdRestoreScript, DataDir: etcdDataDir, PeerURL: peerURL(t.self)}
}

// etcdRestoreFiles is the restore script of a restored cluster's node; none
// otherwise.
func etcdRestoreFiles(v *view) []fileSpec {
	if v.EtcdRestore == nil {
		return nil
	}
	return []fileSpec{tmpl(EtcdRestoreScript, "exk8s-etcd-restore.sh", modeScript, v)}
}
