package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/excloud/k8sapi/internal/apperr"
)

func (a *app) deleteCommand() *cobra.Command {
	var wait bool
	var timeout time.Duration
	del := &cobra.Command{Use: "delete", Short: "Delete a cluster"}
	cmd := &cobra.Command{
		Use:               "cluster CLUSTER",
		Short:             "Delete a cluster: its VMs, security group, DNS record and keys",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.deleteCluster(ctx, args[0], wait, timeout)
		}),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the cluster is deleted (a deletion the platform refused is retried by k8sapi)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	del.AddCommand(cmd)
	return del
}

func (a *app) deleteCluster(ctx context.Context, arg string, wait bool, timeout time.Duration) error {
	c, id, err := a.clientFor(ctx, arg)
	if err != nil {
		return err
	}
	cl, _, err := c.DeleteCluster(ctx, id)
	if err != nil && !(wait && retriedByK8sapi(err)) {
		return err
	}
	if err == nil {
		fmt.Fprintf(a.stdout, "cluster %d (%s) %s\n", cl.ID, cl.Name, cl.Status)
	}
	if !wait || cl.Status == "deleted" {
		return nil
	}
	return a.waitDeleted(ctx, c, id, timeout)
}

// retriedByK8sapi is a deletion refusal that k8sapi itself finishes: one
// already under way, or a platform failure the reconciler retries.
func retriedByK8sapi(err error) bool {
	var api *APIError
	return errors.As(err, &api) && (api.Code == apperr.DeletionInProgress.String() || api.Status == http.StatusBadGateway)
}

func (a *app) waitDeleted(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	return a.poll(ctx, timeout, fmt.Sprintf("cluster %d to be deleted", id), func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, id)
		if err != nil {
			return false, err
		}
		if cl.Status == "deleted" {
			fmt.Fprintf(a.stdout, "cluster %d (%s) deleted\n", cl.ID, cl.Name)
			return true, nil
		}
		return false, nil
	})
}
