package cli

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

// nodePoolsCommand is `k8sapi node-pools`: a cluster's worker pools, as
// kops edits instance groups and eksctl node groups.
func (a *app) nodePoolsCommand() *cobra.Command {
	np := &cobra.Command{Use: "node-pools", Aliases: []string{"nodepools", "np"}, Short: "Add, list, scale and delete a cluster's worker node pools"}
	np.AddCommand(a.createPoolCommand(), a.listPoolsCommand(), a.getPoolCommand(), a.scalePoolCommand(), a.deletePoolCommand())
	return np
}

// poolFlags are create's flags.
type poolFlags struct {
	name, instanceType, idempotencyKey string
	count                              int
	imageID, subnetID                  int64
	labels, taints                     []string
	output                             output
}

func (a *app) createPoolCommand() *cobra.Command {
	var f poolFlags
	cmd := &cobra.Command{
		Use: "create CLUSTER", Short: "Add a worker pool to a cluster", Args: cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			body, err := f.body(cmd)
			if err != nil {
				return err
			}
			return a.poolCall(ctx, args[0], f.output, func(c *Client, id int64) (apitypes.NodePool, *response, error) {
				return c.CreatePool(ctx, id, body, orNewKey(f.idempotencyKey))
			})
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "the pool's name (a DNS label)")
	fl.IntVar(&f.count, "count", 0, "how many workers")
	fl.StringVar(&f.instanceType, "instance-type", "", "the workers' instance type")
	fl.Int64Var(&f.imageID, "image", 0, "the workers' image id")
	fl.Int64Var(&f.subnetID, "subnet", 0, "the workers' subnet id (default: the cluster's)")
	fl.StringSliceVar(&f.labels, "label", nil, "a label of the pool's Nodes, key=value (repeatable)")
	fl.StringSliceVar(&f.taints, "taint", nil, "a taint of the pool's Nodes, key[=value]:Effect (repeatable)")
	fl.StringVar(&f.idempotencyKey, "idempotency-key", "", "Idempotency-Key of the create (default: a new random one; repeat it to retry safely)")
	for _, required := range []string{"name", "count", "instance-type", "image"} {
		_ = cmd.MarkFlagRequired(required)
	}
	addOutputFlag(cmd, &f.output, outputJSON, outputYAML)
	return cmd
}

// orNewKey is key, or a new random Idempotency-Key.
func orNewKey(key string) string {
	if key == "" {
		return "k8sapi-cli-" + rand.Text()
	}
	return key
}

// body is the POST body of the flags given: absent flags are not sent,
// so the API's defaults apply.
func (f poolFlags) body(cmd *cobra.Command) (map[string]any, error) {
	body := map[string]any{"name": f.name, "count": f.count, "instance_type": f.instanceType, "image_id": f.imageID}
	if cmd.Flags().Changed("subnet") {
		body["subnet_id"] = f.subnetID
	}
	labels, err := parseLabels(f.labels)
	if err == nil && len(labels) > 0 {
		body["labels"] = labels
	}
	taints, terr := parseTaints(f.taints)
	if len(taints) > 0 {
		body["taints"] = taints
	}
	if err == nil {
		err = terr
	}
	return body, err
}

func parseLabels(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range flags {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--label %q is not key=value", l)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads key[=value]:Effect, as kubectl taint does.
func parseTaints(flags []string) ([]apitypes.Taint, error) {
	var out []apitypes.Taint
	for _, s := range flags {
		kv, effect, ok := strings.Cut(s, ":")
		k, v, _ := strings.Cut(kv, "=")
		if !ok || k == "" || effect == "" {
			return nil, usageErrorf("--taint %q is not key[=value]:Effect", s)
		}
		out = append(out, apitypes.Taint{Key: k, Value: v, Effect: effect})
	}
	return out, nil
}

func (a *app) listPoolsCommand() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "list CLUSTER", Short: "List a cluster's worker pools", Args: cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			c, id, err := a.clientFor(ctx, args[0])
			if err != nil {
				return err
			}
			pools, res, err := c.ListPools(ctx, id)
			if err != nil {
				return err
			}
			if o.structured() {
				return o.printDocument(a.stdout, res.Body)
			}
			return a.printPools(pools, o)
		}),
	}
	addOutputFlag(cmd, &o, outputWide, outputJSON, outputYAML)
	return cmd
}

func (a *app) getPoolCommand() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "get CLUSTER NAME", Short: "Show one worker pool and its workers", Args: cobra.ExactArgs(2),
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.poolCall(ctx, args[0], o, func(c *Client, id int64) (apitypes.NodePool, *response, error) {
				return c.GetPool(ctx, id, args[1])
			})
		}),
	}
	addOutputFlag(cmd, &o, outputWide, outputJSON, outputYAML)
	return cmd
}

func (a *app) scalePoolCommand() *cobra.Command {
	var o output
	var count int
	cmd := &cobra.Command{
		Use: "scale CLUSTER NAME --count N", Short: "Change a worker pool's count", Args: cobra.ExactArgs(2),
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.poolCall(ctx, args[0], o, func(c *Client, id int64) (apitypes.NodePool, *response, error) {
				return c.ScalePool(ctx, id, args[1], count)
			})
		}),
	}
	cmd.Flags().IntVar(&count, "count", 0, "the new number of workers")
	_ = cmd.MarkFlagRequired("count")
	addOutputFlag(cmd, &o, outputJSON, outputYAML)
	return cmd
}

func (a *app) deletePoolCommand() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use: "delete CLUSTER NAME", Short: "Delete a worker pool: every worker's VM", Args: cobra.ExactArgs(2),
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			return a.poolCall(ctx, args[0], o, func(c *Client, id int64) (apitypes.NodePool, *response, error) {
				return c.DeletePool(ctx, id, args[1])
			})
		}),
	}
	addOutputFlag(cmd, &o, outputJSON, outputYAML)
	return cmd
}

// poolCall makes one call about a pool of the cluster arg names and prints
// the pool it answers in o's format.
func (a *app) poolCall(ctx context.Context, arg string, o output, call func(*Client, int64) (apitypes.NodePool, *response, error)) error {
	c, id, err := a.clientFor(ctx, arg)
	if err != nil {
		return err
	}
	p, res, err := call(c, id)
	if err != nil {
		return err
	}
	if o.structured() {
		return o.printDocument(a.stdout, res.Body)
	}
	return a.printPools([]apitypes.NodePool{p}, o)
}

// printPools is the pools' table; wide adds each pool's workers.
func (a *app) printPools(pools []apitypes.NodePool, o output) error {
	headers := []string{"NAME", "STATE", "COUNT", "READY", "INSTANCE-TYPE", "IMAGE", "AGE"}
	if o == outputWide {
		headers = append(headers, "SUBNET", "LABELS", "TAINTS", "WORKERS")
	}
	t := newTable(a.stdout, headers...)
	for _, p := range pools {
		cells := []string{p.Name, p.State, strconv.Itoa(p.Count), fmt.Sprintf("%d/%d", readyWorkers(p), p.Count),
			p.InstanceType, strconv.FormatInt(p.ImageID, 10), age(a.now(), p.CreatedAt)}
		if o == outputWide {
			cells = append(cells, strconv.FormatInt(p.SubnetID, 10), orNone(labelList(p.Labels)), orNone(taintList(p.Taints)), orNone(workerList(p.Nodes)))
		}
		t.row(cells...)
	}
	return t.flush()
}

func readyWorkers(p apitypes.NodePool) int {
	n := 0
	for _, w := range p.Nodes {
		if w.Phase == "ready" && !w.Retiring {
			n++
		}
	}
	return n
}

func labelList(labels map[string]string) string {
	var out []string
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func taintList(taints []apitypes.Taint) string {
	var out []string
	for _, t := range taints {
		kv := t.Key
		if t.Value != "" {
			kv += "=" + t.Value
		}
		out = append(out, kv+":"+t.Effect)
	}
	return strings.Join(out, ",")
}

func workerList(nodes []apitypes.WorkerView) string {
	var out []string
	for _, w := range nodes {
		out = append(out, fmt.Sprintf("%s(%d,%s)", w.Name, w.VMID, w.Phase))
	}
	return strings.Join(out, ",")
}
