package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) rebootstrapCommand() *cobra.Command {
	return a.nodeCommand("rebootstrap CLUSTER VM_ID", "Re-open a node's bootstrap, so its VM may fetch its bundle again",
		func(ctx context.Context, c *Client, id, vmID int64) (string, error) {
			d, _, err := c.Rebootstrap(ctx, id, vmID)
			return fmt.Sprintf("node %s (vm %d): bootstrap re-opened, phase %s, window %s", d.NodeName, d.VMID, d.Phase, window(d)), err
		})
}
