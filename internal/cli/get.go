package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

func (a *app) getCommand() *cobra.Command {
	get := &cobra.Command{Use: "get", Short: "List clusters, show one cluster or its nodes, list the Kubernetes versions, or list the images, instance types and subnets"}
	get.AddCommand(a.getClustersCommand(), a.getClusterCommand(), a.getNodesCommand(), a.getVersionsCommand())
	get.AddCommand(a.catalogCommands()...)
	return get
}

func (a *app) getClustersCommand() *cobra.Command {
	var o output
	var status string
	var limit int
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "List the org's clusters",
		Args:  cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			clusters, raw, err := listClusters(ctx, c, status, limit)
			if err != nil {
				return err
			}
			if o.structured() {
				doc, _ := json.Marshal(map[string]any{"clusters": raw})
				return o.printDocument(a.stdout, doc)
			}
			pools := make([][]apitypes.NodePool, len(clusters))
			for i, c := range clusters {
				pools[i] = c.NodePools
			}
			return a.printClusters(clusters, pools, o)
		}),
	}
	addOutputFlag(cmd, &o, outputWide, outputJSON, outputYAML)
	cmd.Flags().StringVar(&status, "status", "", "only clusters in this status (founding, active, failed, deleting, deleted)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many clusters (one page); 0: every page")
	return cmd
}

// listClusters reads the clusters: one page of limit when a limit is
// given, else every page (following next_cursor where the API pages).
// The status filter is applied here too, for servers that ignore it.
func listClusters(ctx context.Context, c *Client, status string, limit int) ([]apitypes.ClusterView, []json.RawMessage, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var all []apitypes.ClusterView
	var raw []json.RawMessage
	for {
		page, res, err := c.ListClusters(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		items, err := rawItems(res.Body)
		if err != nil {
			return nil, nil, err
		}
		for i, cl := range page.Clusters {
			if status == "" || cl.Status == status {
				all, raw = append(all, cl), append(raw, items[i])
			}
		}
		if limit > 0 || page.NextCursor == nil || *page.NextCursor == "" {
			return all, raw, nil
		}
		q.Set("cursor", *page.NextCursor)
	}
}

func rawItems(body []byte) ([]json.RawMessage, error) {
	var l struct {
		Clusters []json.RawMessage `json:"clusters"`
	}
	return l.Clusters, json.Unmarshal(body, &l)
}

func (a *app) getClusterCommand() *cobra.Command {
	return a.clusterViewCommand("cluster CLUSTER", "Show one cluster (-o yaml: as a cluster file apply accepts, its status below)", func(cl apitypes.ClusterView, res *response, o output) error {
		if o == outputYAML {
			return printClusterFile(a.stdout, cl, res.Body)
		}
		if o.structured() {
			return o.printDocument(a.stdout, res.Body)
		}
		return a.printClusters([]apitypes.ClusterView{cl}, [][]apitypes.NodePool{cl.NodePools}, o)
	})
}

// clusterViewCommand is a command that reads one cluster and prints it
// with show, in the format of -o.
func (a *app) clusterViewCommand(use, short string, show func(apitypes.ClusterView, *response, output) error) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			cl, res, err := a.fetchCluster(ctx, args[0])
			if err != nil {
				return err
			}
			return show(cl, res, o)
		}),
	}
	addOutputFlag(cmd, &o, outputWide, outputJSON, outputYAML)
	return cmd
}

// fetchCluster reads the cluster the argument names.
func (a *app) fetchCluster(ctx context.Context, arg string) (apitypes.ClusterView, *response, error) {
	c, id, err := a.clientFor(ctx, arg)
	if err != nil {
		return apitypes.ClusterView{}, nil, err
	}
	return c.GetCluster(ctx, id)
}

// printClusters prints clusters, pools[i] being clusters[i]'s node pools.
func (a *app) printClusters(clusters []apitypes.ClusterView, pools [][]apitypes.NodePool, o output) error {
	headers := []string{"ID", "NAME", "STATUS", "BOOTSTRAP", "NODES", "WORKERS", "CNI", "VERSION", "AGE"}
	if o == outputWide {
		headers = append(headers, "ENDPOINT", "KEY-ALGORITHM", "CERTS-EXPIRE")
	}
	t := newTable(a.stdout, headers...)
	for i, c := range clusters {
		row := []string{strconv.FormatInt(c.ID, 10), displayName(c), c.Status, c.Bootstrap.State,
			readyNodes(c.Bootstrap), clusterWorkers(pools[i]), c.CNI, c.KubernetesVersion, age(a.now(), c.CreatedAt)}
		if o == outputWide {
			row = append(row, c.ControlPlaneDNSName, c.KeyAlgorithm, certsExpire(c))
		}
		t.row(row...)
	}
	return t.flush()
}

// readyNodes is "ready/all", as kubectl shows a deployment's pods.
func readyNodes(b apitypes.Bootstrap) string {
	ready := 0
	for _, n := range b.Nodes {
		if n.Phase == "ready" {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(b.Nodes))
}

func certsExpire(c apitypes.ClusterView) string {
	if c.CertificatesExpireAt == nil {
		return "<none>"
	}
	return timestamp(*c.CertificatesExpireAt)
}

func (a *app) getNodesCommand() *cobra.Command {
	short := "List a cluster's nodes, control plane and workers, and their bootstrap phases"
	return a.clusterViewCommand("nodes CLUSTER", short, func(cl apitypes.ClusterView, res *response, o output) error {
		rows := append(nodeRows(cl), workerRows(cl.NodePools)...)
		if o.structured() {
			doc, _ := json.Marshal(map[string]any{"nodes": rows})
			return o.printDocument(a.stdout, doc)
		}
		return printNodes(a.stdout, a.now(), rows, o)
	})
}

// nodeRow joins a node's view with its role and bootstrap phase.
type nodeRow struct {
	apitypes.NodeView
	Role      string `json:"role"` // control-plane, or worker (its pool)
	Phase     string `json:"phase"`
	Message   string `json:"message"`
	UpdatedAt string `json:"updated_at"`
	updated   apitypes.NodeBootstrap
}

func nodeRows(c apitypes.ClusterView) []nodeRow {
	phases := map[int64]apitypes.NodeBootstrap{}
	for _, b := range c.Bootstrap.Nodes {
		phases[b.VMID] = b
	}
	rows := []nodeRow{}
	for _, n := range c.Nodes {
		b := phases[n.VMID]
		rows = append(rows, nodeRow{NodeView: n, Role: "control-plane", Phase: b.Phase, Message: b.Message, UpdatedAt: timestamp(b.UpdatedAt), updated: b})
	}
	return rows
}

func printNodes(w io.Writer, now time.Time, rows []nodeRow, o output) error {
	headers := []string{"NAME", "ROLE", "VM-ID", "ORDINAL", "VERSION", "PHASE", "HEALTH", "IPV4", "SINCE"}
	if o == outputWide {
		headers = append(headers, "IPV6", "PUBLIC-IPV4", "MESSAGE")
	}
	t := newTable(w, headers...)
	for _, r := range rows {
		since := "-" // a pool's view has no worker's time
		if !r.updated.UpdatedAt.IsZero() {
			since = age(now, r.updated.UpdatedAt)
		}
		row := []string{r.Name, r.Role, strconv.FormatInt(r.VMID, 10), strconv.Itoa(r.Ordinal), orNone(r.KubernetesVersion), orNone(r.Phase), healthOf(now, r.NodeHealth), r.IPv4, since}
		if o == outputWide {
			row = append(row, orNone(r.IPv6), orNone(r.PublicIPv4), orNone(firstLine(r.Message)))
		}
		t.row(row...)
	}
	return t.flush()
}

// firstLine is a message's first line: a failure's message carries the
// tail of a log, which describe shows whole.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// displayName is the name of the file applied to c, else k8sapi's own.
func displayName(c apitypes.ClusterView) string {
	if c.Spec != nil {
		return c.Spec.Name
	}
	return c.Name
}

// printClusterFile prints cl as a cluster file (the one kept, else the
// cluster as it is) with the API's document of it, without the two
// files, as its status: `get cluster NAME -o yaml > f; apply -f f`
// applies it unchanged.
func printClusterFile(w io.Writer, cl apitypes.ClusterView, raw []byte) error {
	file := cl.Spec
	if file == nil {
		file = cl.Actual
	}
	if file == nil {
		return fmt.Errorf("k8sapi shows cluster %d without its spec: is the API older than this CLI?", cl.ID)
	}
	var status map[string]json.RawMessage
	if err := json.Unmarshal(raw, &status); err != nil {
		return err
	}
	delete(status, "spec")
	delete(status, "actual")
	statusJSON, _ := json.Marshal(status) // raw messages of a parsed document marshal
	doc, err := json.Marshal(clusterDocument{ClusterFile: *file, Status: statusJSON})
	if err != nil {
		return err
	}
	return outputYAML.printDocument(w, doc)
}
