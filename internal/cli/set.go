package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// setCommand groups what changes a cluster's settings in place.
func (a *app) setCommand() *cobra.Command {
	return group("set", "Change a cluster's settings", a.setRemediationCommand())
}

// setRemediationCommand sets the remediation settings given, and only
// those: a flag left out keeps the cluster's value.
func (a *app) setRemediationCommand() *cobra.Command {
	var after string
	var percent int
	var cmd *cobra.Command
	cmd = a.clusterCommand("remediation ID [--unhealthy-after D] [--max-unhealthy-percent N]",
		"Change when a cluster's unhealthy nodes are replaced (docs/NODE-HEALTH.md)",
		func(ctx context.Context, c *Client, id int64) error {
			body := map[string]any{}
			if cmd.Flags().Changed("unhealthy-after") {
				body["unhealthy_after"] = after
			}
			if cmd.Flags().Changed("max-unhealthy-percent") {
				body["max_unhealthy_percent"] = percent
			}
			return a.setRemediation(ctx, c, id, body)
		})
	cmd.Example = "  k8sapi set remediation 7 --unhealthy-after 10m --max-unhealthy-percent 30\n  k8sapi set remediation 7 --unhealthy-after 0   # off"
	cmd.Flags().StringVar(&after, "unhealthy-after", "", `how long a node may be unhealthy before it is replaced: 1m to 24h, or "0" (remediation off)`)
	cmd.Flags().IntVar(&percent, "max-unhealthy-percent", 0, "replace a worker only while at most this percentage of its pool is unhealthy (0 to 100)")
	return cmd
}

// setRemediation sends body (at least one setting) and says what the
// cluster does now.
func (a *app) setRemediation(ctx context.Context, c *Client, id int64, body map[string]any) error {
	if len(body) == 0 {
		return usageErrorf("give --unhealthy-after, --max-unhealthy-percent or both")
	}
	cl, _, err := c.SetRemediation(ctx, id, body)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "remediation of cluster %d: %s\n", id, remediation(cl))
	return nil
}
