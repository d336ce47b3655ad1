package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) rebootstrapCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "rebootstrap ID VM_ID",
		Short:             "Re-open a node's bootstrap, so its VM may fetch its bundle again",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			id, vmID, err := clusterAndVM(args)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			d, _, err := c.Rebootstrap(ctx, id, vmID)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "node %s (vm %d): bootstrap re-opened, phase %s, window %s\n", d.NodeName, d.VMID, d.Phase, window(d))
			return nil
		}),
	}
}
