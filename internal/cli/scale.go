package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

// scaleCommand groups what changes a cluster's size.
func (a *app) scaleCommand() *cobra.Command {
	return group("scale", "Change the size of a cluster's control plane", a.scaleControlPlaneCommand())
}

func (a *app) scaleControlPlaneCommand() *cobra.Command {
	var count int
	var wait bool
	var timeout time.Duration
	cmd := a.clusterCommand("control-plane ID --count N", "Scale a cluster's control plane to 1, 3 or 5 nodes, one etcd member at a time",
		func(ctx context.Context, c *Client, id int64) error {
			return a.scaleControlPlane(ctx, c, id, count, wait, timeout)
		})
	cmd.Example = "  k8sapi scale control-plane 7 --count 3 --wait"
	cmd.Flags().IntVar(&count, "count", 0, "the new number of control-plane nodes: 1, 3 or 5")
	_ = cmd.MarkFlagRequired("count")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the control plane has the count, every node ready, showing each member as it joins or leaves")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// scaleControlPlane scales cluster id's control plane to count nodes and,
// with wait, follows it until every node is ready (scale control-plane
// and apply both scale so).
func (a *app) scaleControlPlane(ctx context.Context, c *Client, id int64, count int, wait bool, timeout time.Duration) error {
	g, _, err := c.ScaleControlPlane(ctx, id, count)
	if err != nil {
		return err
	}
	started := fmt.Sprintf("the control plane of cluster %d is being scaled from %d to %d nodes (scaling %d, %s)", id, g.FromCount, g.ToCount, g.ID, g.State)
	if !wait {
		fmt.Fprintf(a.stdout, "%s; follow it with: k8sapi describe cluster %d\n", started, id)
		return nil
	}
	fmt.Fprintln(a.stdout, started)
	if err := a.waitScaled(ctx, c, g, timeout); err != nil {
		return fmt.Errorf("%w\nlook at it: k8sapi describe cluster %d", err, id)
	}
	fmt.Fprintf(a.stdout, "the control plane of cluster %d has %d nodes, every one ready\n", id, g.ToCount)
	return nil
}

// waitScaled waits until g's cluster has g.ToCount control-plane nodes,
// every one ready (a shrink: once each leaving member is retired),
// printing each state it passes; the cluster recording
// another count (the scaling failed and kept what it had) or a new node
// failing ends it.
func (a *app) waitScaled(ctx context.Context, c *Client, g apitypes.ControlPlaneScaling, timeout time.Duration) error {
	last := ""
	return a.poll(ctx, timeout, fmt.Sprintf("%d control-plane nodes", g.ToCount), func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, g.ClusterID)
		if err != nil {
			return false, err
		}
		state, done, err := scalingState(cl, g.ToCount)
		if state != last {
			last = state
			fmt.Fprintf(a.stdout, "%s %s\n", a.now().UTC().Format(time.TimeOnly), state)
		}
		return done || err != nil, err
	})
}

// scalingState is where a scaling to want stands in cl: a line that says
// it, whether it is done, and why it failed.
func scalingState(cl apitypes.ClusterView, want int) (string, bool, error) {
	ready, joining := 0, ""
	for _, n := range cl.Bootstrap.Nodes {
		switch n.Phase {
		case "ready":
			ready++
		case "failed":
			return "", true, fmt.Errorf("%s failed: %s", n.NodeName, orNone(n.Message))
		default:
			joining = fmt.Sprintf("; %s %s", n.NodeName, n.Phase)
		}
	}
	state := fmt.Sprintf("%d/%d control-plane nodes ready%s", ready, want, joining)
	if leaving := len(cl.Bootstrap.Nodes) - want; leaving > 0 { // a shrink: one member leaves at a time
		state = fmt.Sprintf("%d control-plane nodes ready, %d to remove to reach %d%s", ready, leaving, want, joining)
	}
	if cl.ControlPlaneCount != want {
		return state, true, fmt.Errorf("the scaling to %d nodes failed: the control plane kept %d", want, cl.ControlPlaneCount)
	}
	return state, ready == want && len(cl.Bootstrap.Nodes) == want, nil
}
