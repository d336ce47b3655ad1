package bundle

import (
	"time"

	"github.com/excloud/k8sapi/internal/pki"
)

// The etcd CRL (docs/REPLACE-NODE.md, "What happens to the old
// identity"): a retired node's etcd-CA serials are listed on a CRL signed
// by the etcd CA, which etcd reads at every handshake, client and peer.
// etcd reads DER only and refuses every handshake while the file is
// missing or unreadable, so the bundle carries the cluster's current CRL
// (PEM: the bundle is text) and etcd's unit installs it as DER before
// etcd starts; a timer fetches a newer one every minute and installs it
// in place, which etcd reads at its next handshake without a restart.
const (
	EtcdCRLScript = binDir + "/exk8s-etcd-crl.sh"
	EtcdCRLTimer  = unitDir + "/exk8s-etcd-crl.timer"
	// EtcdCRLBundlePath is the CRL the bundle carries; EtcdCRLPath the
	// DER etcd reads, written on the node only by the script.
	EtcdCRLBundlePath = pkiDir + "/etcd-crl.pem"
	EtcdCRLPath       = "/var/lib/exk8s/etcd-crl.der"
)

// etcdCRLView is what etcd's unit and the CRL script need to know.
type etcdCRLView struct {
	BundlePEM, DER, CACert string
	// AskEverySeconds: a revocation is in force within two minutes of a
	// node's retirement (issue 43): one period, the timer's accuracy and
	// one call's 10 s.
	AskEverySeconds, AccuracySeconds int
}

// EtcdCRLAskEvery is how often a control-plane node asks for etcd's CRL.
const EtcdCRLAskEvery = time.Minute

func newEtcdCRLView() etcdCRLView {
	return etcdCRLView{BundlePEM: EtcdCRLBundlePath, DER: EtcdCRLPath, CACert: CertPath(pki.EtcdCA),
		AskEverySeconds: int(EtcdCRLAskEvery / time.Second), AccuracySeconds: 5}
}

// etcdCRLPart is the bundle's CRL and what installs and renews it.
func etcdCRLPart(v *view) []fileSpec {
	return []fileSpec{
		{path: EtcdCRLBundlePath, mode: modePublic, raw: v.in.EtcdCRLPEM},
		tmpl(EtcdCRLScript, "exk8s-etcd-crl.sh", modeScript, v),
		tmpl(unitDir+"/exk8s-etcd-crl.service", "exk8s-etcd-crl.service", modePublic, v),
		tmpl(EtcdCRLTimer, "exk8s-etcd-crl.timer", modePublic, v),
	}
}
