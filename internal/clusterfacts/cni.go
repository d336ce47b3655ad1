package clusterfacts

import (
	"errors"
	"fmt"
	"strings"
)

// CNI is a cluster's pod network: which plugin connects its pods.
type CNI string

// The CNI choices. Cilium (the default) is installed by the initial node's
// addons script with helm and owns the pod network; bridge is kOps's
// kubenet without the kubelet's help: the CNI bridge plugin on each node
// over a pod subnet of its own (NodePodCIDR), plain routes between the
// control-plane nodes (they share a subnet) and no overlay, so a cluster
// needs no download beyond the CNI plugins every node installs anyway.
// flannel is the bridge plugin again, over the subnet the controller
// manager allocates each Node (spec.podCIDR), with flanneld's host-gw
// backend routing every Node's subnet to it: a node that joins later is
// routed by every other node's flanneld as soon as its Node exists.
const (
	CNICilium  CNI = "cilium"
	CNIBridge  CNI = "bridge"
	CNIFlannel CNI = "flannel"
)

func (c CNI) String() string { return string(c) }

// cnis is the one table of the choices, the default first.
var cnis = []CNI{CNICilium, CNIBridge, CNIFlannel}

// RoutesJoiningNodes reports whether c carries pods to a node that joins
// after the others were rendered, as a pool's workers do: bridge renders
// every route from the node list at founding, so the nodes already
// running have none to a worker (docs/NODE-POOLS.md).
func (c CNI) RoutesJoiningNodes() bool { return c != CNIBridge }

// CNIs lists the choices, the default first (the API description repeats
// them).
func CNIs() []CNI { return append([]CNI(nil), cnis...) }

// ParseCNI accepts the API's spelling; empty means the default.
func ParseCNI(s string) (CNI, error) {
	if s == "" {
		return cnis[0], nil
	}
	for _, c := range cnis {
		if string(c) == s {
			return c, nil
		}
	}
	return "", errors.New(CNIChoices())
}

// CNIChoices is what a refused CNI is told: must be "a", "b" or "c".
func CNIChoices() string {
	quoted := make([]string, len(cnis))
	for i, c := range cnis {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	last := len(quoted) - 1
	return "must be " + strings.Join(quoted[:last], ", ") + " or " + quoted[last]
}
