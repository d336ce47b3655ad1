package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/spf13/cobra"
)

// KubernetesVersions reads the supported releases and their paths.
func (c *Client) KubernetesVersions(ctx context.Context) (apitypes.KubernetesVersions, error) {
	var v apitypes.KubernetesVersions
	_, err := c.getJSON(ctx, "/kubernetes-versions", &v)
	return v, err
}

// Upgrade plans (a dry run) or begins a cluster's upgrade.
func (c *Client) Upgrade(ctx context.Context, id int64, req apitypes.UpgradeRequest) (apitypes.UpgradeAnswer, error) {
	var a apitypes.UpgradeAnswer
	_, err := c.call(ctx, request{Method: http.MethodPost, Path: clusterPath(id) + "/upgrade", Body: req}, &a)
	return a, err
}

// GetUpgrade reads a cluster's newest upgrade.
func (c *Client) GetUpgrade(ctx context.Context, id int64) (apitypes.Upgrade, error) {
	var u apitypes.Upgrade
	_, err := c.getJSON(ctx, clusterPath(id)+"/upgrade", &u)
	return u, err
}

// MoveUpgrade resumes or aborts a cluster's upgrade (action "resume" or
// "abort").
func (c *Client) MoveUpgrade(ctx context.Context, id int64, action string) (apitypes.Upgrade, error) {
	var u apitypes.Upgrade
	_, err := c.call(ctx, request{Method: http.MethodPost, Path: clusterPath(id) + "/upgrade/" + action}, &u)
	return u, err
}

func (a *app) getVersionsCommand() *cobra.Command {
	return &cobra.Command{
		Use: "versions", Short: "List the Kubernetes versions clusters are founded at and upgraded to", Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.KubernetesVersions(ctx)
			if err != nil {
				return err
			}
			t := newTable(a.stdout, "VERSION", "DEFAULT", "ETCD", "COREDNS", "PAUSE", "UPGRADES-TO", "CONFORMANCE")
			for _, r := range v.Versions {
				def := map[bool]string{true: "yes", false: ""}[r.Version == v.Default]
				t.row(r.Version, orNone(def), r.EtcdVersion, r.CoreDNSVersion, r.PauseVersion, orNone(strings.Join(r.UpgradesTo, ",")), orNone(r.Conformance))
			}
			return t.flush()
		}),
	}
}

// upgradeCommand groups a cluster's upgrade: begin it (the plan first),
// resume or abort it.
func (a *app) upgradeCommand() *cobra.Command {
	u := &cobra.Command{Use: "upgrade", Short: "Upgrade a cluster's Kubernetes version, one control-plane node at a time"}
	u.AddCommand(a.upgradeClusterCommand(), a.moveUpgradeCommand("resume", "Resume a paused upgrade"),
		a.moveUpgradeCommand("abort", "Abort an upgrade: the control-plane nodes it moved go back by replacement"))
	return u
}

func (a *app) upgradeClusterCommand() *cobra.Command {
	var to string
	var dryRun, wait, allow bool
	var surge, drain int
	var timeout time.Duration
	cmd := a.clusterCommand("cluster ID", "Show the upgrade's plan and gates, then begin it",
		func(ctx context.Context, c *Client, id int64) error {
			req := apitypes.UpgradeRequest{KubernetesVersion: to, Surge: &surge, DrainTimeoutSeconds: &drain, AllowDeprecatedAPIs: allow, DryRun: true}
			plan, err := c.Upgrade(ctx, id, req)
			if err != nil {
				return err
			}
			a.printUpgradePlan(plan.Plan)
			if dryRun {
				return nil
			}
			return a.beginUpgrade(ctx, c, id, req, wait, timeout)
		})
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the target Kubernetes version (k8sapi get versions)")
	f.BoolVar(&dryRun, "dry-run", false, "show the plan and its gates only")
	f.BoolVar(&wait, "wait", false, "wait until the upgrade is done, paused or aborted, showing each node's version")
	f.BoolVar(&allow, "allow-deprecated-apis", false, "override the deprecated-API gate (recorded in the cluster's trail)")
	f.IntVar(&surge, "surge", 1, "new workers of a pool made before as many old ones are removed")
	f.IntVar(&drain, "drain-timeout", 300, "seconds each old worker's drain may take")
	f.DurationVar(&timeout, "timeout", time.Hour, "how long --wait waits")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// beginUpgrade begins the upgrade req asks of cluster id and, with wait,
// follows it until it is done (upgrade cluster and apply both begin one
// so).
func (a *app) beginUpgrade(ctx context.Context, c *Client, id int64, req apitypes.UpgradeRequest, wait bool, timeout time.Duration) error {
	req.DryRun = false
	begun, err := c.Upgrade(ctx, id, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "upgrade %d of cluster %d to %s is %s\n", begun.Upgrade.ID, id, req.KubernetesVersion, begun.Upgrade.State)
	if !wait {
		fmt.Fprintf(a.stdout, "follow it with: k8sapi describe cluster %d\n", id)
		return nil
	}
	return a.waitUpgraded(ctx, c, id, timeout)
}

// printUpgradePlan shows the chain, the gates and the order of the nodes.
func (a *app) printUpgradePlan(p apitypes.UpgradePlan) {
	passes := []string{p.From}
	for _, pass := range p.Passes {
		passes = append(passes, pass.To)
	}
	fmt.Fprintf(a.stdout, "Plan: cluster %d %s (surge %d, drain timeout %ds)\n", p.ClusterID, strings.Join(passes, " → "), p.Surge, p.DrainTimeoutSeconds)
	fmt.Fprintln(a.stdout, "Gates:")
	for _, g := range p.Gates {
		fmt.Fprintf(a.stdout, "  %-16s %s: %s\n", g.Name, gateVerdict(g), g.Detail)
	}
	fmt.Fprintln(a.stdout, "Control plane, one at a time by replacement:")
	for i, n := range p.ControlPlane {
		fmt.Fprintf(a.stdout, "  %d. %s (vm %d, %s)\n", i+1, n.Name, n.VMID, n.From)
	}
	for _, pool := range p.Pools {
		fmt.Fprintf(a.stdout, "Pool %s, by surge of %d: %d workers\n", pool.Name, p.Surge, len(pool.Nodes))
	}
}

func gateVerdict(g apitypes.UpgradeGate) string {
	switch {
	case g.Pending:
		return "pending"
	case g.Passed:
		return "passed"
	case g.Overridden:
		return "FAILED (overridden)"
	}
	return "FAILED"
}

// waitUpgraded waits until the cluster's upgrade is settled or paused,
// showing the control-plane and worker versions as they move; a paused or
// aborted upgrade ends the wait as an error naming why.
func (a *app) waitUpgraded(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	last := ""
	return a.poll(ctx, timeout, fmt.Sprintf("cluster %d's upgrade", id), func(ctx context.Context) (bool, error) {
		u, err := c.GetUpgrade(ctx, id)
		if err != nil {
			return false, err
		}
		cl, _, err := c.GetCluster(ctx, id)
		if err != nil {
			return false, err
		}
		if line := upgradeProgress(u, cl); line != last {
			last = line
			fmt.Fprintf(a.stdout, "%s %s\n", a.now().UTC().Format(time.TimeOnly), line)
		}
		return upgradeOver(u)
	})
}

// upgradeProgress is one line of where u stands: its state and each
// node's version.
func upgradeProgress(u apitypes.Upgrade, cl apitypes.ClusterView) string {
	var nodes []string
	for _, n := range cl.Nodes {
		nodes = append(nodes, n.Name+" "+orNone(n.KubernetesVersion))
	}
	for _, p := range cl.NodePools {
		for _, w := range p.Nodes {
			nodes = append(nodes, w.Name+" "+orNone(w.KubernetesVersion))
		}
	}
	return fmt.Sprintf("%s (pass to %s): %s", u.State, u.PassTo, strings.Join(nodes, ", "))
}

// upgradeOver: done ends the wait; paused or aborted end it as an error.
func upgradeOver(u apitypes.Upgrade) (bool, error) {
	switch u.State {
	case "done":
		return true, nil
	case "paused":
		return true, fmt.Errorf("the upgrade paused at %s: %s; resume it (k8sapi upgrade resume %d) or abort it (k8sapi upgrade abort %d)",
			orNone(u.PausedNode), u.StateReason, u.ClusterID, u.ClusterID)
	case "aborted":
		return true, errors.New("the upgrade was aborted: " + u.StateReason)
	}
	return false, nil
}

func (a *app) moveUpgradeCommand(action, short string) *cobra.Command {
	return a.clusterCommand(action+" ID", short, func(ctx context.Context, c *Client, id int64) error {
		u, err := c.MoveUpgrade(ctx, id, action)
		if err == nil {
			fmt.Fprintf(a.stdout, "upgrade %d of cluster %d to %s is %s\n", u.ID, id, u.To, u.State)
		}
		return err
	})
}

// upgrade describes the cluster's newest upgrade; a cluster never
// upgraded (404) has none, and a deployment without the route says so.
func (d *describer) upgrade(u apitypes.Upgrade, err error) {
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == apperr.NotFound.String() && strings.Contains(apiErr.Message, "never been upgraded"):
		d.field(0, "Upgrade", "<none>")
		return
	case err != nil:
		d.field(0, "Upgrade", "unavailable: "+err.Error())
		return
	}
	fmt.Fprintln(d.w, "Upgrade:")
	d.field(1, "State", fmt.Sprintf("%s (%s → %s, pass to %s)", u.State, u.From, u.To, u.PassTo))
	if u.StateReason != "" {
		d.field(1, "Reason", u.StateReason)
	}
	if u.PausedNode != "" {
		d.field(1, "Paused at", u.PausedNode)
	}
	if u.SnapshotID != nil {
		d.field(1, "Snapshot", fmt.Sprint(*u.SnapshotID))
	}
	d.field(1, "Updated", timestamp(u.UpdatedAt))
}
