package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// nodesCommand groups what an operator does to one control-plane node.
func (a *app) nodesCommand() *cobra.Command {
	n := &cobra.Command{Use: "nodes", Aliases: []string{"node"}, Short: "Act on a cluster's control-plane nodes"}
	n.AddCommand(a.replaceNodeCommand())
	return n
}

func (a *app) replaceNodeCommand() *cobra.Command {
	return a.nodeCommand("replace ID VM_ID", "Replace a control-plane node by a new VM (the old VM is deleted once the new node is ready)",
		func(ctx context.Context, c *Client, id, vmID int64) (string, error) {
			r, _, err := c.ReplaceNode(ctx, id, vmID)
			return fmt.Sprintf("node %s (vm %d) is being replaced by %s (replacement %d, %s); follow it with: k8sapi describe cluster %d",
				r.OldNodeName, r.OldVMID, r.NewNodeName, r.ID, r.State, id), err
		})
}

// nodeCommand is a command on one node of a cluster (its arguments ID
// VM_ID) whose outcome is the one line do returns.
func (a *app) nodeCommand(use, short string, do func(ctx context.Context, c *Client, id, vmID int64) (string, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(2), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			id, vmID, err := clusterAndVM(args)
			if err != nil {
				return err
			}
			c, err := a.client()
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

// clusterAndVM parses a command's ID and VM_ID arguments.
func clusterAndVM(args []string) (id, vmID int64, err error) {
	if id, err = parseID("cluster id", args[0]); err != nil {
		return 0, 0, err
	}
	vmID, err = parseID("vm id", args[1])
	return id, vmID, err
}
