package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type kubeconfigOptions struct {
	ttl    time.Duration
	merge  bool
	file   string
	static bool
}

func (a *app) kubeconfigCommand() *cobra.Command {
	var opts kubeconfigOptions
	cmd := &cobra.Command{
		Use:   "kubeconfig CLUSTER",
		Short: "Write an admin kubeconfig for a cluster: print it, write it, or merge it into your kubeconfig",
		Long: "By default the kubeconfig's user runs `k8sapi credential` (an exec plugin): kubectl gets certificates of at most 15 minutes\n" +
			"over a key made on this machine, asked for with your token, so revoking the token ends the access within 15 minutes.\n" +
			"The plugin reads the token as this command does (K8SAPI_TOKEN or the config file; never --token, which is not written).\n" +
			"--static writes a kubeconfig with an embedded key and certificate instead, made by k8sapi, living --ttl: it cannot be\n" +
			"revoked before it expires.",
		Example: "  k8sapi kubeconfig 5 --merge    # into $KUBECONFIG or ~/.kube/config, as its current context\n" +
			"  k8sapi kubeconfig demo --output-file demo.kubeconfig\n" +
			"  k8sapi kubeconfig 5 --static --ttl 1h --output-file ci.kubeconfig",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if opts.ttl != 0 && !opts.static {
				return usageErrorf("--ttl is the lifetime of a --static kubeconfig; the default one's certificates live 15 minutes and renew themselves")
			}
			return a.kubeconfig(ctx, args[0], opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.static, "static", false, "embed a key and certificate made by k8sapi (living --ttl) instead of the exec plugin")
	cmd.Flags().DurationVar(&opts.ttl, "ttl", 0, "with --static: lifetime of the kubeconfig's certificate, 5m to 168h (default: the API's, 12h)")
	cmd.Flags().BoolVar(&opts.merge, "merge", false, "merge into $KUBECONFIG (its first file) or ~/.kube/config and make it the current context")
	cmd.Flags().StringVar(&opts.file, "output-file", "", "write the kubeconfig to this file (mode 0600)")
	cmd.MarkFlagsMutuallyExclusive("merge", "output-file")
	// -o is a format everywhere else: here the only one is yaml (a
	// kubeconfig), and anything else is refused rather than taken for a
	// file name (`-o json` once wrote an admin credential to ./json).
	var o output
	addOutputFlag(cmd, &o, outputYAML)
	cmd.Flag("output").Usage = "output format: yaml (the kubeconfig is YAML; to write a file, --output-file)"
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if err := o.check([]output{outputYAML}); err != nil {
			return usageErrorf("%v; to write the kubeconfig to a file: --output-file FILE", err)
		}
		return nil
	}
	return cmd
}

// issuedConfig is a kubeconfig to hand out, however it was made, and what
// the operator is told of it.
type issuedConfig struct {
	kubeconfig, name, user, context string
	// lasts says how long it works: an expiry, or the exec plugin's terms.
	lasts string
}

func (a *app) kubeconfig(ctx context.Context, arg string, opts kubeconfigOptions) error {
	c, id, err := a.clientFor(ctx, arg)
	if err != nil {
		return err
	}
	var k issuedConfig
	if opts.static {
		k, err = staticKubeconfig(ctx, c, id, opts.ttl)
	} else {
		k, err = a.execKubeconfig(ctx, c, id)
	}
	if err != nil {
		return err
	}
	switch {
	case opts.merge:
		return a.mergeKubeconfig(k)
	case opts.file != "":
		if err := writeFileAtomic(opts.file, []byte(k.kubeconfig)); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s: context %s, %s\n", opts.file, k.context, k.lasts)
		return nil
	}
	_, err = fmt.Fprint(a.stdout, k.kubeconfig)
	return err
}

// staticKubeconfig is the API's kubeconfig with its key (POST
// /clusters/{id}/kubeconfig); ttl 0 takes the API's default.
func staticKubeconfig(ctx context.Context, c *Client, id int64, ttl time.Duration) (issuedConfig, error) {
	s := ""
	if ttl != 0 {
		s = ttl.String()
	}
	k, _, err := c.IssueKubeconfig(ctx, id, s)
	if err != nil {
		return issuedConfig{}, err
	}
	return issuedConfig{kubeconfig: k.Kubeconfig, name: k.Name, user: k.User, context: k.Context,
		lasts: "expires " + timestamp(k.ExpiresAt)}, nil
}

// execKubeconfig is a kubeconfig whose user runs `k8sapi credential`. Its
// first credential is asked for (and cached) now: that proves the token
// and the cluster before anything is written, and tells the cluster's
// endpoint and CA.
func (a *app) execKubeconfig(ctx context.Context, c *Client, id int64) (issuedConfig, error) {
	first, err := a.firstCredential(ctx, c, id)
	if err != nil {
		return issuedConfig{}, err
	}
	cred := first.Issued
	if a.flags.Token != "" {
		fmt.Fprintln(a.stderr, "warning: the kubeconfig's plugin does not get --token: set K8SAPI_TOKEN or token: in the config file for kubectl")
	}
	user, context := cred.Name+"-admin", cred.Name
	kubeconfig, err := execKubeconfigFile(execEntry{
		cluster: cred.Name, server: cred.Server, caPEM: []byte(cred.CertificateAuthority), user: user, context: context,
		args: a.credentialArgs(c, id),
	})
	if err != nil {
		return issuedConfig{}, err
	}
	return issuedConfig{kubeconfig: kubeconfig, name: cred.Name, user: user, context: context,
		lasts: "renewed by `k8sapi credential` every 15 minutes while your token is valid"}, nil
}

// credentialArgs are the exec plugin's arguments: the cluster, and the API
// and config file this command used, so kubectl's run finds the same ones
// (the token stays where it was: never in a kubeconfig).
func (a *app) credentialArgs(c *Client, id int64) []string {
	args := []string{"credential", "--cluster", fmt.Sprint(id), "--url", c.BaseURL}
	if a.configPath != "" {
		args = append(args, "--config", absolute(a.configPath))
	}
	return args
}

func (a *app) mergeKubeconfig(k issuedConfig) error {
	path := kubeconfigPath(a.getenv, a.home)
	if err := mergeKubeconfigFile(path, []byte(k.kubeconfig)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "merged cluster %s, user %s and context %s into %s; current context %s, %s\n",
		k.name, k.user, k.context, path, k.context, k.lasts)
	return nil
}
