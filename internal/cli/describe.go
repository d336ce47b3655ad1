package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

func (a *app) describeCommand() *cobra.Command {
	describe := &cobra.Command{Use: "describe", Short: "Show a cluster in detail"}
	describe.AddCommand(&cobra.Command{
		Use:               "cluster CLUSTER",
		Short:             "Show a cluster's nodes, phases, bootstrap windows, fetches, node pools and workers, its upgrade, expiries, kubeconfigs and events",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE:              a.run(a.describeCluster),
	})
	return describe
}

func (a *app) describeCluster(ctx context.Context, _ *cobra.Command, args []string) error {
	cl, _, err := a.fetchCluster(ctx, args[0])
	if err != nil {
		return err
	}
	c, _ := a.client() // fetchCluster resolved the same settings
	details := make([]apitypes.NodeBootstrapDetail, 0, len(cl.Nodes))
	for _, n := range cl.Nodes {
		d, _, err := c.NodeBootstrap(ctx, cl.ID, n.VMID)
		if err != nil {
			return err
		}
		details = append(details, d)
	}
	w := &describer{w: a.stdout, now: a.now()}
	w.cluster(cl)
	w.nodes(details, cl.Bootstrap.Nodes, cl.Nodes)
	w.pools(cl.NodePools)
	w.replacements(cl.Replacements)
	w.upgrade(c.GetUpgrade(ctx, cl.ID))
	kubeconfigs, err := c.Kubeconfigs(ctx, cl.ID)
	w.kubeconfigs(kubeconfigs, err)
	events, err := c.Events(ctx, cl.ID)
	w.events(events, err)
	return nil
}

// describer writes kubectl-describe-style "Key:  value" blocks; now is
// what a running step's time is counted to.
type describer struct {
	w   io.Writer
	now time.Time
}

func (d *describer) field(indent int, key, value string) {
	fmt.Fprintf(d.w, "%s%-*s%s\n", strings.Repeat("  ", indent), 24-2*indent, key+":", value)
}

func (d *describer) cluster(cl apitypes.ClusterView) {
	d.field(0, "ID", fmt.Sprint(cl.ID))
	d.field(0, "Name", cl.Name)
	d.field(0, "Status", cl.Status)
	if cl.StatusReason != "" {
		d.field(0, "Status reason", cl.StatusReason)
	}
	d.field(0, "Endpoint", "https://"+cl.ControlPlaneDNSName+":6443")
	d.field(0, "Kubernetes", cl.KubernetesVersion)
	d.field(0, "CNI", cl.CNI)
	d.field(0, "Key algorithm", cl.KeyAlgorithm)
	d.field(0, "Service CIDR", cl.ServiceCIDR)
	d.field(0, "Pod CIDR", cl.PodCIDR)
	d.field(0, "DNS configured", dnsConfigured(cl))
	d.dnsRecords(cl)
	d.field(0, "Created", timestamp(cl.CreatedAt))
	d.field(0, "Updated", timestamp(cl.UpdatedAt))
	d.field(0, "Bootstrap", cl.Bootstrap.State+" ("+readyNodes(cl.Bootstrap)+" nodes ready)")
	d.field(0, "Remediation", remediation(cl))
	d.conditions(0, cl.Conditions)
	d.expiries(cl)
	d.caRotation(cl)
}

// dnsRecords lists the control-plane name's records: what to create by
// hand when the DNS API did not take them.
func (d *describer) dnsRecords(cl apitypes.ClusterView) {
	fmt.Fprintln(d.w, "DNS records:")
	for _, r := range cl.DNSRecords {
		fmt.Fprintf(d.w, "  %s %d IN %s %s\n", r.Name, r.TTL, r.Type, r.Value)
	}
}

// replacements lists the newest control-plane node replacements.
func (d *describer) replacements(rs []apitypes.NodeReplacement) {
	fmt.Fprintln(d.w, "Node replacements:")
	if len(rs) == 0 {
		fmt.Fprintln(d.w, "  <none>")
	}
	for _, r := range rs {
		line := fmt.Sprintf("  %d: %s (vm %d) by %s: %s since %s", r.ID, r.OldNodeName, r.OldVMID, r.NewNodeName, r.State, timestamp(r.CreatedAt))
		if r.StateReason != "" {
			line += " (" + r.StateReason + ")"
		}
		fmt.Fprintln(d.w, line)
	}
}

// conditions writes a resource's conditions, one line each: type, status,
// reason, since when, and the message.
func (d *describer) conditions(indent int, conds []apitypes.Condition) {
	if len(conds) == 0 {
		return
	}
	pad := strings.Repeat("  ", indent+1)
	fmt.Fprintf(d.w, "%sConditions:\n", strings.Repeat("  ", indent))
	fmt.Fprintf(d.w, "%s%-12s %-8s %-12s %-21s %s\n", pad, "Type", "Status", "Reason", "Since", "Message")
	for _, c := range conds {
		line := fmt.Sprintf("%-12s %-8s %-12s %-21s %s", c.Type, c.Status, c.Reason, timestamp(c.LastTransitionTime), c.Message)
		fmt.Fprintln(d.w, pad+strings.TrimRight(line, " "))
	}
}

func dnsConfigured(cl apitypes.ClusterView) string {
	if cl.DNSConfigured {
		return "yes"
	}
	return "no: " + orNone(cl.DNSError)
}

func (d *describer) expiries(cl apitypes.ClusterView) {
	fmt.Fprintln(d.w, "Expiries:")
	d.field(1, "Certificates", certsExpire(cl))
	names := make([]string, 0, len(cl.CAsExpireAt))
	for name := range cl.CAsExpireAt {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d.field(1, name, timestamp(cl.CAsExpireAt[name]))
	}
}

// nodes describes each node's bootstrap; statuses (the cluster's view,
// by VM) carry the steps' times, views (by VM) the version each runs and
// its health.
func (d *describer) nodes(details []apitypes.NodeBootstrapDetail, statuses []apitypes.NodeBootstrap, views []apitypes.NodeView) {
	fmt.Fprintln(d.w, "Nodes:")
	for _, n := range details {
		fmt.Fprintf(d.w, "  %s (vm %d):\n", n.NodeName, n.VMID)
		var health apitypes.NodeHealth
		if i := slices.IndexFunc(views, func(v apitypes.NodeView) bool { return v.VMID == n.VMID }); i >= 0 {
			d.field(2, "Kubernetes", orNone(views[i].KubernetesVersion))
			health = views[i].NodeHealth
		}
		d.field(2, "Phase", n.Phase+" since "+timestamp(n.UpdatedAt))
		d.field(2, "Health", healthLine(health))
		if len(health.DeprecatedAPIs) > 0 {
			d.field(2, "Deprecated", requestedAPIs(health.DeprecatedAPIs))
		}
		if n.Message != "" {
			d.field(2, "Message", strings.ReplaceAll(n.Message, "\n", "\n"+strings.Repeat(" ", 24)))
		}
		if i := slices.IndexFunc(statuses, func(s apitypes.NodeBootstrap) bool { return s.VMID == n.VMID }); i >= 0 {
			d.steps(statuses[i])
		}
		d.field(2, "Window", window(n))
		d.fetches(n.Fetches)
	}
}

// steps shows where the node's bootstrap time went, step by step, and the
// step it is on now with how long it has been running.
func (d *describer) steps(s apitypes.NodeBootstrap) {
	if len(s.Steps) == 0 {
		d.field(2, "Steps", "<none>")
	} else {
		fmt.Fprintln(d.w, "    Steps:")
		for _, st := range s.Steps {
			fmt.Fprintf(d.w, "      %-24s %8s  (%s to %s)\n", st.Phase, seconds(st.Seconds), timestamp(st.StartedAt), timestamp(st.EndedAt))
		}
	}
	if s.Running == nil {
		d.field(2, "Running", "<none>")
		return
	}
	running := d.now.Sub(s.Running.StartedAt).Seconds()
	d.field(2, "Running", fmt.Sprintf("%s for %s (since %s)", s.Running.Phase, seconds(max(0, running)), timestamp(s.Running.StartedAt)))
}

// seconds is a step's length as a duration, to the tenth of a second.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond).String()
}

func window(n apitypes.NodeBootstrapDetail) string {
	state := "closed"
	if n.Window.Open {
		state = "open"
	}
	return fmt.Sprintf("%s (opened %s, closes %s)", state, timestamp(n.Window.OpenedAt), timestamp(n.Window.ClosesAt))
}

func (d *describer) fetches(fetches []apitypes.Fetch) {
	if len(fetches) == 0 {
		d.field(2, "Fetches", "<none>")
		return
	}
	d.field(2, "Fetches", fmt.Sprintf("%d, newest first", len(fetches)))
	for _, f := range fetches {
		fmt.Fprintf(d.w, "        %s  %-16s %s\n", timestamp(f.FetchedAt), f.Outcome, f.RequestID)
	}
}

// events lists the cluster's audit trail (who did what, and how it ended);
// a deployment without the route still gets the rest, with the reason.
func (d *describer) events(list []apitypes.AuditEvent, err error) {
	if err != nil {
		d.field(0, "Events", "unavailable: "+err.Error())
		return
	}
	if len(list) == 0 {
		d.field(0, "Events", "<none>")
		return
	}
	fmt.Fprintln(d.w, "Events:")
	t := newTable(d.w, "  AT", "ACTION", "OUTCOME", "PRINCIPAL", "RESOURCE", "REQUEST-ID")
	for _, e := range list {
		t.row("  "+timestamp(e.At), e.Action, fmt.Sprintf("%s (%d)", e.Outcome, e.Status), e.Principal, e.Resource, orNone(e.RequestID))
		if e.Reason != "" {
			t.row("    " + e.Reason)
		}
	}
	_ = t.flush()
}

// kubeconfigs lists the issued kubeconfigs; a deployment without the
// route still gets the rest of the description, with the reason.
func (d *describer) kubeconfigs(list []apitypes.KubeconfigIssue, err error) {
	if err != nil {
		d.field(0, "Kubeconfigs", "unavailable: "+err.Error())
		return
	}
	if len(list) == 0 {
		d.field(0, "Kubeconfigs", "<none>")
		return
	}
	fmt.Fprintln(d.w, "Kubeconfigs:")
	t := newTable(d.w, "  SERIAL", "ISSUED", "EXPIRES", "ISSUED-BY", "REQUEST-ID")
	for _, k := range list {
		t.row("  "+k.Serial, timestamp(k.IssuedAt), timestamp(k.ExpiresAt), k.IssuedBy, k.RequestID)
	}
	_ = t.flush()
}
