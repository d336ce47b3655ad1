package bundle

import "github.com/excloud/k8sapi/internal/clusterfacts"

// Under the flannel CNI the controller manager allocates every Node a pod
// subnet as it registers (--allocate-node-cidrs), flanneld (a DaemonSet
// the initial node applies, flannel.yaml) writes its Node's as its lease
// and routes every other Node's to that node (host-gw), and each node's
// exk8s-flannel-cni unit writes the node's conflist from the lease, as
// flannel's own CNI plugin would at each pod's ADD: that plugin is not
// served by the module proxy here, so the bridge plugin every node has
// is configured directly. Nothing of a node is rendered from its peers,
// so a node that joins later needs nothing of the nodes already running.

// flannelView is what the flannel CNI renders.
type flannelView struct {
	// Network is the pod CIDR: net-conf.json's Network, which the
	// controller manager cuts into NodeCIDRMaskSize subnets.
	Network          string
	NodeCIDRMaskSize int
	// APIServerHost is where flanneld reaches the API server: the control
	// plane's DNS name, which names every control-plane node, as a
	// worker's kubelet does (flannel.yaml says why not the Service).
	APIServerHost string
	// SubnetEnv is flanneld's lease on the node, which Conflist follows.
	SubnetEnv, Conflist string
	// Unit names the service and script that write Conflist.
	Unit string
}

// leaseDir is where flanneld writes its lease (its hostPath).
const leaseDir = "/run/flannel"

// conflistPath is the node's CNI configuration, whichever CNI writes it.
const conflistPath = "/etc/cni/net.d/10-exk8s.conflist"

func newFlannelView(c clusterfacts.Cluster) *flannelView {
	return &flannelView{
		Network: c.PodCIDR, NodeCIDRMaskSize: clusterfacts.NodePodPrefix, APIServerHost: c.ControlPlaneDNSName,
		SubnetEnv: leaseDir + "/subnet.env", Conflist: conflistPath, Unit: "exk8s-flannel-cni",
	}
}

// flannelCNIFiles are the node's side of flannel: the script that writes
// the conflist from the lease and its unit (one pass before the kubelet on
// every boot, then following the lease).
func flannelCNIFiles(f *flannelView) []fileSpec {
	return []fileSpec{
		tmpl(unitDir+"/"+f.Unit+".service", f.Unit+".service", modePublic, f),
		tmpl(binDir+"/"+f.Unit+".sh", f.Unit+".sh", modeScript, f),
	}
}
