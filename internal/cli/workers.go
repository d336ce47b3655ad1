package cli

import (
	"fmt"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// clusterWorkers is "ready/asked" over every pool of a cluster, as each
// pool's READY column counts (a retiring worker is on its way out).
func clusterWorkers(pools []apitypes.NodePool) string {
	ready, asked := 0, 0
	for _, p := range pools {
		ready += readyWorkers(p)
		asked += p.Count
	}
	return fmt.Sprintf("%d/%d", ready, asked)
}

// workerRows are every pool's workers as rows of get nodes.
func workerRows(pools []apitypes.NodePool) []nodeRow {
	var rows []nodeRow
	for _, p := range pools {
		for _, w := range p.Nodes {
			role := "worker (" + p.Name + ")"
			if w.Retiring {
				role += ", retiring"
			}
			rows = append(rows, nodeRow{NodeView: w.NodeView, Role: role, Phase: w.Phase})
		}
	}
	return rows
}

// pools describes each pool and its workers.
func (d *describer) pools(pools []apitypes.NodePool) {
	if len(pools) == 0 {
		d.field(0, "Node pools", "<none>")
		return
	}
	fmt.Fprintln(d.w, "Node pools:")
	for _, p := range pools {
		fmt.Fprintf(d.w, "  %s:\n", p.Name)
		state := p.State
		if p.StateReason != "" {
			state += ": " + p.StateReason
		}
		d.field(2, "State", state)
		d.field(2, "Workers", fmt.Sprintf("%d/%d ready", readyWorkers(p), p.Count))
		d.field(2, "Instance type", fmt.Sprintf("%s (image %d, subnet %d)", p.InstanceType, p.ImageID, p.SubnetID))
		d.conditions(2, p.Conditions)
		for _, w := range p.Nodes {
			line := fmt.Sprintf("%s (vm %d, %s, %s): %s, %s", w.Name, w.VMID, orNone(w.IPv4), orNone(w.KubernetesVersion), orNone(w.Phase), healthLine(w.NodeHealth))
			if w.Retiring {
				line += ", retiring"
			}
			fmt.Fprintln(d.w, strings.Repeat("  ", 3)+line)
		}
	}
}
