package bundle

// Scheduling: while no pool of the cluster has a Ready worker, workloads
// run on the control plane; once one has, each control-plane node carries
// the control-plane NoSchedule taint (as kubeadm and kOps taint theirs),
// and loses it when the last worker leaves. k8sapi holds no credentials of
// the cluster, so each control-plane node manages its own Node's taint
// (exk8s-control-plane-taint.sh, a service started once the node is
// ready) with an identity of its own, which RBAC lets read and patch
// Nodes, and nothing else but its API server's /metrics, which the health
// report reads for the deprecated APIs requested of it
// (control-plane-rbac.yaml).
const (
	// ControlPlaneTaintUser is the taint's identity (the cert table's
	// pki.ControlPlaneTaint), whom RBAC names.
	ControlPlaneTaintUser = "exk8s:control-plane-taint"
	// ControlPlaneTaintUnit is its service.
	ControlPlaneTaintUnit = "exk8s-control-plane-taint"
	// WorkerPoolLabel is on every worker's Node, its value the pool's
	// name: what tells a worker from a control-plane node. A kubelet may
	// set it on its own Node (NodeRestriction keeps only kubernetes.io and
	// k8s.io keys from it), as EKS's kubelets set eks.amazonaws.com/nodegroup.
	WorkerPoolLabel = "k8sapi.excloud.in/node-pool"
	// ControlPlaneTaintKey is the taint (NoSchedule) and the role label
	// every control-plane node carries.
	ControlPlaneTaintKey = "node-role.kubernetes.io/control-plane"
)

// taintView is what the taint's service and script know: whom they run
// as, how to tell a worker, and how often they look.
type taintView struct {
	Unit, User, Kubeconfig, PoolLabel, Key string
	EverySeconds                           int
}

func newTaintView() taintView {
	return taintView{Unit: ControlPlaneTaintUnit, User: ControlPlaneTaintUser, Kubeconfig: KubeconfigPath("control-plane-taint"),
		PoolLabel: WorkerPoolLabel, Key: ControlPlaneTaintKey,
		// Two list calls a round: a worker's readiness shows on the
		// control plane's taints within this, at a few requests a minute.
		EverySeconds: 30}
}

// controlPlaneTaintPart installs the taint's service and script.
func controlPlaneTaintPart(v *view) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/"+ControlPlaneTaintUnit+".service", ControlPlaneTaintUnit+".service", modePublic, v),
		tmpl(binDir+"/"+ControlPlaneTaintUnit+".sh", ControlPlaneTaintUnit+".sh", modeScript, v),
	}
}
