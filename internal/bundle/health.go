package bundle

import (
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/pki"
)

// The health report's timer, unit and script (docs/NODE-HEALTH.md),
// installed with every bundle, a control-plane node's and a worker's, and
// started once the node is ready. One script template serves both roles:
// a control-plane node also checks its etcd member and its API server.
const (
	HealthScript = binDir + "/exk8s-health-report.sh"
	HealthTimer  = unitDir + "/exk8s-health-report.timer"
	// HealthEvery is how often a node reports (nodehealth.ReportEvery,
	// which judges a silent node by it).
	HealthEvery = 30 * time.Second
)

// RenewHeader is the header of a health report's answer that, RenewDue,
// asks the node to renew now: a CA rotation stands at a phase it has not
// applied (docs/CA-ROTATION.md).
const (
	RenewHeader = "X-Exk8s-Renew"
	RenewDue    = "due"
)

// DrainHeader is the header of a node's health report's answer that
// tells the node (a worker, or a control-plane node an upgrade replaces)
// the drain bound, in seconds, of the running upgrade that retires it;
// the health script keeps it in DrainBoundFile for the drain at
// power-off (drain.go). Absent: the bundle's own bound.
const DrainHeader = "X-Exk8s-Drain-Seconds"

// SnapshotHeader is the header of a control-plane node's health report's
// answer that, SnapshotDue, tells the node a pending etcd snapshot was
// handed to it: its health script starts the snapshot service now, so
// the snapshot does not wait for the snapshot timer's next ask
// (SnapshotAskEvery).
const (
	SnapshotHeader = "X-Exk8s-Snapshot"
	SnapshotDue    = "due"
)

// healthView is what the health script checks and where it reports: the
// kubelet's /healthz, and on a control-plane node its etcd member (as
// the API server's etcd client, which the etcd CA trusts) and its API
// server's /readyz (as the kubelet, over loopback). Each check is bounded
// by CheckSeconds, so a whole run fits well inside one period. A
// control-plane node also reads its API server's /metrics for the
// deprecated APIs requested of it (Deprecated).
type healthView struct {
	Route                         string // the VM route's name in the shell library (VMRoutes)
	RenewHeader, RenewDue         string
	DrainHeader, DrainBoundFile   string
	SnapshotHeader, SnapshotDue   string
	EverySeconds, CheckSeconds    int
	KubeletHealthz                string
	EtcdHealth                    string
	EtcdCACert, EtcdCert, EtcdKey string
	Kubeconfig, APIServer         string
	Deprecated                    deprecatedView
}

// deprecatedView is how the health script reads and bounds the deprecated
// APIs its API server served (apiserver_requested_deprecated_apis): as
// the node's control-plane identity, the only one RBAC lets GET /metrics
// (control-plane-rbac.yaml), and within the report's bounds (apitypes),
// leaving out what k8sapi would refuse.
type deprecatedView struct {
	Kubeconfig, Metric          string
	Max, GroupLen, NameLen      int
	NamePattern, ReleasePattern string
}

// DeprecatedMetric is the API server's gauge of the deprecated APIs
// requested of it since it started: 1 per API.
const DeprecatedMetric = "apiserver_requested_deprecated_apis"

func newHealthView(route string) healthView {
	return healthView{
		Route: route, EverySeconds: int(HealthEvery / time.Second), CheckSeconds: 5, RenewHeader: RenewHeader, RenewDue: RenewDue,
		DrainHeader: DrainHeader, DrainBoundFile: DrainBoundFile, SnapshotHeader: SnapshotHeader, SnapshotDue: SnapshotDue,
		KubeletHealthz: "http://127.0.0.1:10248/healthz",
		EtcdHealth:     "https://127.0.0.1:2379/health",
		EtcdCACert:     CertPath(pki.EtcdCA), EtcdCert: CertPath(pki.APIServerEtcdClient), EtcdKey: KeyPath(pki.APIServerEtcdClient),
		Kubeconfig: KubeconfigPath("kubelet"), APIServer: "https://127.0.0.1:6443",
		Deprecated: deprecatedView{Kubeconfig: KubeconfigPath("control-plane-taint"), Metric: DeprecatedMetric,
			Max: apitypes.MaxDeprecatedAPIs, GroupLen: apitypes.MaxDeprecatedGroupLen, NameLen: apitypes.MaxDeprecatedNameLen,
			NamePattern: apitypes.DeprecatedNamePattern, ReleasePattern: apitypes.RemovedReleasePattern},
	}
}

// healthPart installs the health report's timer, service and script.
func healthPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(HealthTimer, "exk8s-health-report.timer", modePublic, v),
		tmpl(unitDir+"/exk8s-health-report.service", "exk8s-health-report.service", modePublic, v),
		tmpl(HealthScript, "exk8s-health-report.sh", modeScript, v),
	}
}
