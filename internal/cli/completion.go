package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// completeClusterIDs completes a cluster id argument with the org's
// clusters (id and name), when the settings reach the API; shells get
// no file names either way.
func (a *app) completeClusterIDs(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	clusters, _, err := listClusters(cmd.Context(), c, "", 0)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids := make([]string, 0, len(clusters))
	for _, cl := range clusters {
		ids = append(ids, fmt.Sprintf("%d\t%s (%s)", cl.ID, cl.Name, cl.Status))
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}
