package bundle

import "time"

// Every node k8sapi retires drains itself as its VM powers off (k8sapi
// holds no credentials of the cluster): a worker removed from its pool or
// retired by an upgrade's surge, and a control-plane node a replacement
// retires (every upgrade step replaces one) or a shrink removes. One
// script and its units serve both roles (exk8s-drain-node.sh): cordon,
// evictions through the eviction API (PodDisruptionBudgets respected, a
// bounded wait), then its own Node deleted, with its kubelet's identity.

// How long a removed node's drain waits for its pods to leave (the
// eviction API, PodDisruptionBudgets respected) unless k8sapi said
// otherwise: drainWait. The running upgrade that retires a node tells it
// its own bound (drain_timeout_seconds) in the answers to its health
// reports, which the health script keeps in DrainBoundFile; the drain
// takes it while it is at most drainWordAge old and within
// [MinDrainSeconds, MaxDrainSeconds] (the range the upgrade's request
// accepts), else drainWait. systemd lets the drain unit run for the
// longest bound plus its calls' own bounds (drainCalls), and the
// power-off itself that much and a margin for the units stopped after it:
// poweroff.target's own JobTimeoutSec (30 minutes) would force the
// power-off in the middle of a longer drain. A platform that powers a
// deleted VM off gracefully must allow as long as the bound it is told.
const (
	drainWait       = 120 * time.Second
	MinDrainSeconds = 30
	MaxDrainSeconds = 3600
	drainCalls      = 60 * time.Second
	drainStopWait   = MaxDrainSeconds*time.Second + drainCalls
	powerOffWait    = drainStopWait + 5*time.Minute
	// drainWordAge: ten health reports. A word older than that is not
	// trusted: the upgrade may have ended since, and k8sapi not answered.
	drainWordAge = 5 * time.Minute
)

// Where a node keeps what k8sapi told it of its drain: the bound
// (DrainBoundFile, written by the health script) and, while its own
// drain may have left its Node cordoned, a mark (DrainCordonMark): a
// node that stays (its VM powered on again, not deleted) uncordons its
// Node at its next start (exk8s-drain-undo.service), so a failed or
// cut-off drain never leaves a node that stays cordoned.
const (
	DrainBoundFile  = "/var/lib/exk8s/drain-seconds"
	DrainCordonMark = "/var/lib/exk8s/drain-cordoned"
)

// drainView is what the drain's units and script know: the kubelet's
// kubeconfig (its identity) and Server, the API server its calls go to;
// the bounds (Seconds for pods unless k8sapi told another in
// [MinSeconds, MaxSeconds], kept in BoundFile, trusted for WordSeconds;
// StopSeconds for the drain unit's whole stop, PowerOffSeconds for the
// power-off's); its cordon's mark; and AwaitGone, whether it waits for
// its evicted pods to be gone or only for every eviction to be granted.
type drainView struct {
	Kubeconfig, Server                           string
	Seconds, MinSeconds, MaxSeconds, WordSeconds int
	StopSeconds, PowerOffSeconds                 int
	BoundFile, CordonMark                        string
	AwaitGone                                    bool
}

// newDrainView is the drain of v's node. Its calls go to the cluster's
// endpoint name, never to the node's own API server: a retired
// control-plane node's etcd member is removed before its VM is deleted
// (a replacement's new node removes it as it joins, a shrink before the
// deletion), so its own API server no longer serves, while the name was
// moved off the node before the deletion (controlplane.nameOff). For the
// same reason its kubelet, which reaches only that API server, never
// sees its evicted pods deleted: a control-plane node's drain
// (awaitGone false) waits until every eviction is granted (each
// PodDisruptionBudget allowed it), not for pods its kubelet cannot end;
// the pod garbage collector deletes them with its Node. A worker's
// kubelet reaches the cluster's name too, and ends its pods: its drain
// waits for them to be gone.
func newDrainView(v *view, awaitGone bool) *drainView {
	return &drainView{
		Kubeconfig: KubeconfigPath("kubelet"), Server: WorkerAPIServerURL(v.Cluster),
		Seconds: int(drainWait.Seconds()), MinSeconds: MinDrainSeconds, MaxSeconds: MaxDrainSeconds,
		WordSeconds: int(drainWordAge.Seconds()), StopSeconds: int(drainStopWait.Seconds()),
		PowerOffSeconds: int(powerOffWait.Seconds()), BoundFile: DrainBoundFile, CordonMark: DrainCordonMark,
		AwaitGone: awaitGone,
	}
}

// drainPart is the unit that drains the node and deletes its Node when it
// powers off, the unit that undoes its cordon when the node stays, their
// script (exk8s-drain-node.sh), and the power-off's timeout raised for
// the longest drain.
func drainPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/exk8s-drain.service", "exk8s-drain.service", modePublic, v),
		tmpl(unitDir+"/exk8s-drain-undo.service", "exk8s-drain-undo.service", modePublic, v),
		tmpl(unitDir+"/poweroff.target.d/exk8s-drain.conf", "exk8s-drain-poweroff.conf", modePublic, v),
		tmpl(binDir+"/exk8s-drain-node.sh", "exk8s-drain-node.sh", modeScript, v),
	}
}
