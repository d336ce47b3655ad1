package clusterfacts

import (
	"errors"
	"fmt"
)

// CNI is a cluster's pod network: which plugin connects its pods.
type CNI string

// The CNI choices. Cilium (the default) is installed by the initial node's
// addons script with helm and owns the pod network; bridge is kOps's
// kubenet without the kubelet's help: the CNI bridge plugin on each node
// over a pod subnet of its own (NodePodCIDR), plain routes between the
// control-plane nodes (they share a subnet) and no overlay, so a cluster
// needs no download beyond the CNI plugins every node installs anyway.
const (
	CNICilium CNI = "cilium"
	CNIBridge CNI = "bridge"
)

func (c CNI) String() string { return string(c) }

// CNIs lists the choices, the default first (the API description repeats
// them).
func CNIs() []CNI { return []CNI{CNICilium, CNIBridge} }

// ParseCNI accepts the API's spelling; empty means the default.
func ParseCNI(s string) (CNI, error) {
	switch CNI(s) {
	case "", CNICilium:
		return CNICilium, nil
	case CNIBridge:
		return CNIBridge, nil
	}
	return "", errors.New(CNIChoices())
}

// CNIChoices is what a refused CNI is told.
func CNIChoices() string { return fmt.Sprintf("must be %q or %q", CNICilium, CNIBridge) }
