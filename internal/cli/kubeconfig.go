package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

type kubeconfigOptions struct {
	ttl   time.Duration
	merge bool
	file  string
}

func (a *app) kubeconfigCommand() *cobra.Command {
	var opts kubeconfigOptions
	cmd := &cobra.Command{
		Use:   "kubeconfig ID",
		Short: "Mint an admin kubeconfig for a cluster: print it, write it, or merge it into your kubeconfig",
		Example: "  k8sapi kubeconfig 5 --ttl 1h --merge    # into $KUBECONFIG or ~/.kube/config, as its current context\n" +
			"  k8sapi kubeconfig 5 -o exk8s-1-5.kubeconfig",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.kubeconfig(ctx, args[0], opts)
		}),
	}
	cmd.Flags().DurationVar(&opts.ttl, "ttl", 0, "lifetime of the kubeconfig's certificate, 5m to 168h (default: the API's, 12h)")
	cmd.Flags().BoolVar(&opts.merge, "merge", false, "merge into $KUBECONFIG (its first file) or ~/.kube/config and make it the current context")
	cmd.Flags().StringVarP(&opts.file, "output-file", "o", "", "write the kubeconfig to this file (mode 0600)")
	cmd.MarkFlagsMutuallyExclusive("merge", "output-file")
	return cmd
}

func (a *app) kubeconfig(ctx context.Context, arg string, opts kubeconfigOptions) error {
	c, id, err := a.clientFor(arg)
	if err != nil {
		return err
	}
	ttl := ""
	if opts.ttl != 0 {
		ttl = opts.ttl.String()
	}
	k, _, err := c.IssueKubeconfig(ctx, id, ttl)
	if err != nil {
		return err
	}
	switch {
	case opts.merge:
		return a.mergeKubeconfig(k)
	case opts.file != "":
		if err := writeFileAtomic(opts.file, []byte(k.Kubeconfig)); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s: context %s, expires %s\n", opts.file, k.Context, timestamp(k.ExpiresAt))
		return nil
	}
	_, err = fmt.Fprint(a.stdout, k.Kubeconfig)
	return err
}

func (a *app) mergeKubeconfig(k apitypes.IssuedKubeconfig) error {
	path := kubeconfigPath(a.getenv, a.home)
	if err := mergeKubeconfigFile(path, []byte(k.Kubeconfig)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "merged cluster %s, user %s and context %s into %s; current context %s, expires %s\n",
		k.Name, k.User, k.Context, path, k.Context, timestamp(k.ExpiresAt))
	return nil
}
