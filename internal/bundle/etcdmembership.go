package bundle

import (
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// The etcd membership unit and script (docs/SCALE-CONTROL-PLANE.md,
// "Shrinking"), installed with every control-plane bundle and started once
// the node is ready, beside the snapshot timer: while a scaling shrinks
// the control plane, the member that stays and removes (k8sapi answers
// only it) takes each leaving member out of etcd and reports it.
const (
	EtcdMembershipScript = binDir + "/exk8s-etcd-membership.sh"
	EtcdMembershipTimer  = unitDir + "/exk8s-etcd-membership.timer"
)

// etcdMembershipView is what the script needs: how it reaches the local
// member as a client (as the snapshot script does), and how often it asks.
type etcdMembershipView struct {
	Endpoint          string
	CACert, Cert, Key string
	// AskEverySeconds: a leaving member is removed within about a minute
	// of being marked; the leaving VM goes once the removal is reported.
	AskEverySeconds, AccuracySeconds int
}

// EtcdMembershipAskEvery is how often a control-plane node asks for etcd
// members to remove.
const EtcdMembershipAskEvery = time.Minute

// RenewEvery is how often a ready node renews its certificates: its
// renewal timer's OnCalendar=daily (exk8s-renew-certificates.timer).
const RenewEvery = 24 * time.Hour

func newEtcdMembershipView() etcdMembershipView {
	return etcdMembershipView{Endpoint: localEtcd,
		CACert: CertPath(pki.EtcdCA), Cert: CertPath(pki.APIServerEtcdClient), Key: KeyPath(pki.APIServerEtcdClient),
		AskEverySeconds: int(EtcdMembershipAskEvery / time.Second), AccuracySeconds: 5}
}

// etcdMembershipPart installs the membership timer, service and script.
func etcdMembershipPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(EtcdMembershipTimer, "exk8s-etcd-membership.timer", modePublic, v),
		tmpl(unitDir+"/exk8s-etcd-membership.service", "exk8s-etcd-membership.service", modePublic, v),
		tmpl(EtcdMembershipScript, "exk8s-etcd-membership.sh", modeScript, v),
	}
}
