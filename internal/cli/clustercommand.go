package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// clusterCommand is a command on one cluster (its argument ID).
func (a *app) clusterCommand(use, short string, do func(ctx context.Context, c *Client, id int64) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			id, err := parseID("cluster id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			return do(ctx, c, id)
		}),
	}
}

// group is a command that only groups subs (scale, set).
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short}
	g.AddCommand(subs...)
	return g
}
