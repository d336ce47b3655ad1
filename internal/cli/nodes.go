package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

// nodesCommand groups what an operator does to one control-plane node.
func (a *app) nodesCommand() *cobra.Command {
	n := &cobra.Command{Use: "nodes", Aliases: []string{"node"}, Short: "Act on a cluster's control-plane nodes"}
	n.AddCommand(a.replaceNodeCommand())
	return n
}

func (a *app) replaceNodeCommand() *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := a.nodeCommand("replace CLUSTER VM_ID", "Replace a control-plane node by a new VM (the old VM is deleted once the new node is ready)",
		func(ctx context.Context, c *Client, id, vmID int64) (string, error) {
			r, _, err := c.ReplaceNode(ctx, id, vmID)
			if err != nil {
				return "", err
			}
			started := fmt.Sprintf("node %s (vm %d) is being replaced by %s (replacement %d, %s)", r.OldNodeName, r.OldVMID, r.NewNodeName, r.ID, r.State)
			if !wait {
				return fmt.Sprintf("%s; follow it with: k8sapi describe cluster %d", started, id), nil
			}
			fmt.Fprintln(a.stdout, started)
			if err := a.waitReplaced(ctx, c, r, timeout); err != nil {
				return "", fmt.Errorf("%w\nlook at it: k8sapi describe cluster %d", err, id)
			}
			return fmt.Sprintf("node %s replaced %s: ready, the old VM %d deleted", r.NewNodeName, r.OldNodeName, r.OldVMID), nil
		})
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the new node is ready and the old one is gone, showing the new node's phase")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// waitReplaced waits until r's new node is ready and its old VM is gone
// from the control plane (the replacement's end, as GET /clusters/{id}
// shows it: the replacement's own row is in no route yet), printing each
// state it passes; the new node failing ends it.
func (a *app) waitReplaced(ctx context.Context, c *Client, r apitypes.NodeReplacement, timeout time.Duration) error {
	what := fmt.Sprintf("%s to replace %s", r.NewNodeName, r.OldNodeName)
	lines := &changeLines{a: a, what: what}
	return a.poll(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, r.ClusterID)
		if err != nil {
			return false, err
		}
		state, done, failed := replacementState(cl, r)
		lines.show(state)
		if failed != "" {
			return true, fmt.Errorf("%s (vm replacing %d) failed: %s", r.NewNodeName, r.OldVMID, failed)
		}
		return done, nil
	})
}

// replacementState is where r stands in cl: a line that says it, whether
// it is done, and the new node's failure message if it failed.
func replacementState(cl apitypes.ClusterView, r apitypes.NodeReplacement) (state string, done bool, failed string) {
	phase, vm := "no VM yet", int64(0)
	for _, n := range cl.Bootstrap.Nodes {
		if n.NodeName == r.NewNodeName {
			phase, vm = n.Phase, n.VMID
			if n.Phase == "failed" {
				failed = orNone(n.Message)
			}
		}
	}
	oldGone := !slices.Contains(cl.ControlPlaneVMIDs, r.OldVMID)
	old := "retiring"
	if oldGone {
		old = "gone"
	}
	state = fmt.Sprintf("%s (vm %d): %s; old node %s (vm %d): %s", r.NewNodeName, vm, phase, r.OldNodeName, r.OldVMID, old)
	if i := slices.IndexFunc(cl.Replacements, func(o apitypes.NodeReplacement) bool { return o.ID == r.ID }); i >= 0 {
		// the replacement's own state, where the server shows it
		if o := cl.Replacements[i]; o.State == "failed" {
			return state, true, orNone(o.StateReason)
		}
	}
	return state, phase == "ready" && oldGone, failed
}

// nodeCommand is a command on one node of a cluster (its arguments ID
// VM_ID) whose outcome is the one line do returns.
func (a *app) nodeCommand(use, short string, do func(ctx context.Context, c *Client, id, vmID int64) (string, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(2), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			vmID, err := parseID("vm id", args[1])
			if err != nil {
				return err
			}
			c, id, err := a.clientFor(ctx, args[0])
			if err != nil {
				return err
			}
			line, err := do(ctx, c, id, vmID)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, line)
			return nil
		}),
	}
}
