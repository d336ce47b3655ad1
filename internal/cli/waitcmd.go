package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// waitCommand follows an operation someone else started (another
// terminal, a CI job, a call cut off by a gateway's 502): each ends when
// what it waits for is reached, fails when it fails, and says what it
// waits for while it waits.
func (a *app) waitCommand() *cobra.Command {
	w := &cobra.Command{Use: "wait", Short: "Wait for a cluster, a node pool or a control-plane node replacement to finish"}
	var timeout time.Duration
	w.PersistentFlags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait")
	var until string
	cluster := &cobra.Command{
		Use: "cluster CLUSTER", Short: "Wait until a cluster is ready (--for ready), active (--for active) or deleted (--for deleted)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.onCluster(func(ctx context.Context, c *Client, id int64, _ []string) error {
			return a.waitCluster(ctx, c, id, until, timeout)
		}),
	}
	cluster.Flags().StringVar(&until, "for", "ready", "ready (every control-plane node bootstrapped), active (founded) or deleted")
	pool := &cobra.Command{
		Use: "pool CLUSTER NAME", Aliases: []string{"node-pool"}, Short: "Wait until a node pool's operation is over and each of its workers is ready",
		Args: cobra.ExactArgs(2),
		RunE: a.onCluster(func(ctx context.Context, c *Client, id int64, args []string) error {
			return a.waitPool(ctx, c, id, args[1], timeout)
		}),
	}
	replacement := &cobra.Command{
		Use: "replacement CLUSTER", Short: "Wait until the cluster's newest control-plane node replacement is over",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.onCluster(func(ctx context.Context, c *Client, id int64, _ []string) error {
			return a.waitNewestReplacement(ctx, c, id, timeout)
		}),
	}
	w.AddCommand(cluster, pool, replacement)
	return w
}

// onCluster is a command body over the cluster its first argument names.
func (a *app) onCluster(fn func(ctx context.Context, c *Client, id int64, args []string) error) func(*cobra.Command, []string) error {
	return a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
		c, id, err := a.clientFor(ctx, args[0])
		if err != nil {
			return err
		}
		return fn(ctx, c, id, args)
	})
}

func (a *app) waitCluster(ctx context.Context, c *Client, id int64, until string, timeout time.Duration) error {
	switch until {
	case "ready":
		return a.waitReady(ctx, c, id, timeout)
	case "active":
		return a.waitActive(ctx, c, id, timeout)
	case "deleted":
		return a.waitDeleted(ctx, c, id, timeout)
	}
	return usageErrorf("--for %q: is one of ready, active, deleted", until)
}

// waitPool waits until pool name of cluster id is active with every
// worker ready, printing each change; a failed pool ends it as an error.
func (a *app) waitPool(ctx context.Context, c *Client, id int64, name string, timeout time.Duration) error {
	what := fmt.Sprintf("node pool %s of cluster %d", name, id)
	lines := &changeLines{a: a, what: what}
	return a.poll(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		p, _, err := c.GetPool(ctx, id, name)
		if err != nil {
			return false, err
		}
		lines.show(poolLine(p))
		if p.State == "failed" {
			return true, fmt.Errorf("node pool %s failed: %s", p.Name, orNone(p.StateReason))
		}
		return p.State == "active" && readyWorkers(p) == p.Count && len(p.Nodes) == p.Count, nil
	})
}

func poolLine(p apitypes.NodePool) string {
	return fmt.Sprintf("node pool %s: %s, %d/%d workers ready", p.Name, p.State, readyWorkers(p), p.Count)
}

// waitNewestReplacement follows the cluster's newest replacement as
// GET /clusters/{id} shows it.
func (a *app) waitNewestReplacement(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	cl, _, err := c.GetCluster(ctx, id)
	if err != nil {
		return err
	}
	if len(cl.Replacements) == 0 {
		return fmt.Errorf("cluster %d has no node replacement (k8sapi nodes replace CLUSTER VM_ID starts one)", id)
	}
	r := cl.Replacements[0]
	switch r.State {
	case "done":
		fmt.Fprintf(a.stdout, "replacement %d: done (%s replaced %s)\n", r.ID, r.NewNodeName, r.OldNodeName)
		return nil
	case "failed":
		return fmt.Errorf("replacement %d failed: %s", r.ID, orNone(r.StateReason))
	}
	return a.waitReplaced(ctx, c, r, timeout)
}

// changeLines prints a wait's state when it changes, and off a terminal
// a heartbeat naming what it waits for when nothing changed for
// heartbeatEvery.
type changeLines struct {
	a          *app
	what, last string
	at         time.Time
}

func (l *changeLines) show(line string) {
	now := l.a.now()
	switch {
	case line != l.last:
		l.last = line
	case now.Sub(l.at) >= heartbeatEvery && !l.a.terminal:
		line = fmt.Sprintf("still waiting for %s: %s", l.what, line)
	default:
		return
	}
	l.at = now
	fmt.Fprintf(l.a.progressOut(), "%s %s\n", now.UTC().Format(time.TimeOnly), line)
}
