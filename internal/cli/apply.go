package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/clusterspec"
)

type applyOptions struct {
	file    string
	yes     bool
	dryRun  bool
	wait    bool
	timeout time.Duration
	// idempotencyKey is the founding's (default: a new random one); an
	// interrupted founding prints the apply that repeats it.
	idempotencyKey string
}

func (a *app) applyCommand() *cobra.Command {
	var opts applyOptions
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make a cluster as a cluster file declares it: show the plan, ask, then act",
		Long: "apply reads a cluster file (examples/cluster.yaml; docs/CLI.md lists its keys), finds the org's cluster of its name " +
			"and shows the plan: create, change (pools, the snapshot schedule, the control plane's count as a scaling, the Kubernetes version " +
			"as an upgrade, last and after a scaling), or nothing. It asks before acting unless --yes; off a terminal it acts only with --yes. " +
			"The file is kept by the server (GET /clusters/{id} shows it as spec), so the plan is the same from any machine.",
		Example: "  k8sapi apply -f examples/cluster.yaml\n  k8sapi apply -f cluster.yaml --dry-run\n  k8sapi apply -f cluster.yaml --yes --wait",
		Args:    cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return a.apply(ctx, opts)
		}),
	}
	cmd.Flags().StringVarP(&opts.file, "filename", "f", "", "the cluster file (YAML)")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "act without asking")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "show the plan and change nothing")
	cmd.Flags().BoolVar(&opts.wait, "wait", false, "after acting, follow each operation (the founding, a control-plane scaling, an upgrade) until it is done, then wait until every control-plane node is ready")
	cmd.Flags().StringVar(&opts.idempotencyKey, "idempotency-key", "", "Idempotency-Key of the founding, when the plan founds one (default: a new random one; repeat it to follow an interrupted founding)")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 30*time.Minute, "how long apply waits for a founding to become active, and --wait for each operation and for the nodes")
	return cmd
}

func (a *app) apply(ctx context.Context, opts applyOptions) error {
	f, err := readClusterFile(opts.file)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	target, err := findNamed(ctx, c, f.Name)
	if err != nil {
		return err
	}
	steps, err := planFor(f, target)
	if err != nil {
		return err
	}
	a.printPlan(f, target, steps)
	if err := a.printUpgradeOf(ctx, c, target, steps); err != nil {
		return err
	}
	if len(steps) == 0 || opts.dryRun {
		return nil
	}
	if err := a.confirm(opts.yes); err != nil {
		return err
	}
	return a.carryOut(ctx, c, f, target, steps, opts)
}

// clusterDocument is a cluster file as `get cluster -o yaml` prints it:
// the file, then the cluster's status, which apply reads past.
type clusterDocument struct {
	apitypes.ClusterFile
	Status json.RawMessage `json:"status,omitempty"`
}

// readClusterFile reads path as a cluster file: YAML, strictly (a key
// this CLI does not know is a mistake to name, not to skip).
func readClusterFile(path string) (apitypes.ClusterFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return apitypes.ClusterFile{}, err
	}
	var doc clusterDocument
	if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
		return apitypes.ClusterFile{}, fmt.Errorf("%s is not a cluster file: %w", path, err)
	}
	return doc.ClusterFile, nil
}

// planFor is the plan of f over target (nil: no cluster has its name),
// its refusal told in the file's words.
func planFor(f apitypes.ClusterFile, target *apitypes.ClusterView) ([]clusterspec.Step, error) {
	var actual, kept *apitypes.ClusterFile
	if target != nil {
		actual, kept = target.Actual, target.Spec
	}
	steps, err := clusterspec.Plan(f, actual, kept)
	var refused *apperr.Error
	switch {
	case errors.As(err, &refused) && refused.Code == apperr.InvalidRequest:
		return nil, fmt.Errorf("the file cannot be applied:\n  %s", strings.ReplaceAll(refused.Message, "; ", "\n  "))
	case err != nil: // another operation's refusal (a scaling's 422): its own code
		return nil, fmt.Errorf("the file cannot be applied: %w", err)
	}
	return steps, err
}

// stepMarks are how the plan marks each action, as terraform and kubectl
// diff do.
var stepMarks = map[string]string{
	clusterspec.CreateCluster: "+", clusterspec.CreatePool: "+", clusterspec.ScalePool: "~",
	clusterspec.DeletePool: "-", clusterspec.KeepSpec: "=", clusterspec.ScaleControlPlane: "~", clusterspec.Upgrade: "~",
}

// printUpgradeOf shows the server's plan of the plan's upgrade (a dry run
// of POST /clusters/{id}/upgrade): its chain of passes, its gates as they
// stand and the order of the nodes. A version the cluster cannot move to
// refuses the plan with the upgrade's own code.
func (a *app) printUpgradeOf(ctx context.Context, c *Client, target *apitypes.ClusterView, steps []clusterspec.Step) error {
	for _, s := range steps {
		if s.Action != clusterspec.Upgrade {
			continue
		}
		answer, err := c.Upgrade(ctx, target.ID, apitypes.UpgradeRequest{KubernetesVersion: s.Version, DryRun: true})
		if u, live := liveUpgradeTo(ctx, c, target.ID, s.Version, err); live {
			fmt.Fprintf(a.stdout, "upgrade %d to %s is already %s: apply begins no other, and --wait follows it\n", u.ID, u.To, u.State)
			continue
		}
		if err != nil {
			return fmt.Errorf("the file cannot be applied: its kubernetes_version: %w", err)
		}
		a.printUpgradePlan(answer.Plan)
	}
	return nil
}

// applyUpgrade begins the upgrade of cluster id to version, or, when
// that very upgrade is live already (a second apply of the same file
// while it runs), takes it as begun: --wait follows either.
func (a *app) applyUpgrade(ctx context.Context, c *Client, id int64, version string, opts applyOptions) error {
	err := a.beginUpgrade(ctx, c, id, apitypes.UpgradeRequest{KubernetesVersion: version}, opts.wait, opts.timeout)
	u, live := liveUpgradeTo(ctx, c, id, version, err)
	if !live {
		return err
	}
	fmt.Fprintf(a.stdout, "upgrade %d of cluster %d to %s is already %s\n", u.ID, id, u.To, u.State)
	if !opts.wait {
		return nil
	}
	return a.waitUpgraded(ctx, c, id, opts.timeout)
}

// liveUpgradeTo is cluster id's live upgrade when err is the server's
// upgrade_in_progress and that upgrade goes to version.
func liveUpgradeTo(ctx context.Context, c *Client, id int64, version string, err error) (apitypes.Upgrade, bool) {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != apperr.UpgradeInProgress.String() {
		return apitypes.Upgrade{}, false
	}
	u, err := c.GetUpgrade(ctx, id)
	return u, err == nil && u.To == version
}

func (a *app) printPlan(f apitypes.ClusterFile, target *apitypes.ClusterView, steps []clusterspec.Step) {
	name := f.Name
	if target != nil {
		name = fmt.Sprintf("%s (cluster %d, %s)", f.Name, target.ID, target.Name)
	}
	if len(steps) == 0 {
		fmt.Fprintf(a.stdout, "cluster %s is as the file asks: nothing to do\n", name)
		return
	}
	fmt.Fprintf(a.stdout, "Plan for cluster %s:\n", name)
	for _, s := range steps {
		fmt.Fprintf(a.stdout, "  %s %s %s: %s\n", stepMarks[s.Action], s.Action, s.Target, s.Detail)
	}
}

// confirm asks on the terminal; off one, only --yes acts.
func (a *app) confirm(yes bool) error {
	if yes {
		return nil
	}
	if a.stdin == nil || !a.stdinTerminal {
		return errors.New("not applied: no terminal to ask on (stdin is not one); run again with --yes to act, or --dry-run to only see the plan")
	}
	fmt.Fprint(a.stderr, "Apply this plan? [y/N] ")
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("not applied")
	}
	return nil
}

// carryOut runs the steps in order through the existing routes. A
// cluster runs one operation at a time, so an upgrade planned after a
// scaling begins only once the scaling is done: with --wait apply follows
// the scaling and then begins it, without it the upgrade is left waiting
// for the next apply of the same file (as a second `eksctl upgrade` or
// `kops update` would be), said so.
func (a *app) carryOut(ctx context.Context, c *Client, f apitypes.ClusterFile, target *apitypes.ClusterView, steps []clusterspec.Step, opts applyOptions) error {
	var id int64
	if target != nil {
		id = target.ID
	}
	scaling := false
	for _, s := range steps {
		if s.Action == clusterspec.Upgrade && scaling && !opts.wait {
			fmt.Fprintf(a.stdout, "waiting: %s %s begins once the control plane's scaling is done (one operation at a time): "+
				"apply the file again then, or apply it with --wait to follow the scaling and begin the upgrade\n", s.Action, s.Target)
			continue
		}
		var err error
		id, err = a.runStep(ctx, c, f, id, s, opts)
		if err != nil {
			return fmt.Errorf("%s %s: %w", s.Action, s.Target, err)
		}
		fmt.Fprintf(a.stdout, "done: %s %s\n", s.Action, s.Target)
		scaling = scaling || s.Action == clusterspec.ScaleControlPlane
	}
	if opts.wait {
		return a.waitReady(ctx, c, id, opts.timeout)
	}
	return nil
}

// runStep does one step on cluster id (0 before the founding) and
// returns the cluster's id.
func (a *app) runStep(ctx context.Context, c *Client, f apitypes.ClusterFile, id int64, s clusterspec.Step, opts applyOptions) (int64, error) {
	switch s.Action {
	case clusterspec.CreateCluster:
		return a.applyFounding(ctx, c, f, opts)
	case clusterspec.KeepSpec:
		_, _, err := c.KeepSpec(ctx, id, f)
		return id, err
	case clusterspec.CreatePool:
		_, _, err := c.CreatePool(ctx, id, clusterspec.PoolRequestOf(*s.Pool), orNewKey(""))
		return id, err
	case clusterspec.ScalePool:
		_, _, err := c.ScalePool(ctx, id, s.Target, *s.Pool.Count)
		return id, err
	case clusterspec.DeletePool:
		_, _, err := c.DeletePool(ctx, id, s.Target)
		return id, err
	case clusterspec.ScaleControlPlane:
		return id, a.scaleControlPlane(ctx, c, id, s.Count, opts.wait, opts.timeout)
	case clusterspec.Upgrade:
		return id, a.applyUpgrade(ctx, c, id, s.Version, opts)
	}
	return id, fmt.Errorf("this CLI cannot %s", s.Action)
}

// applyFounding founds f's cluster, keeps its file at once (so its name
// finds it from now on), and waits until it is active (its pools need an
// active cluster). An interrupted founding prints its Idempotency-Key and
// the apply that follows it again.
func (a *app) applyFounding(ctx context.Context, c *Client, f apitypes.ClusterFile, opts applyOptions) (int64, error) {
	key := orNewKey(opts.idempotencyKey)
	// apply waits for the founding anyway: a gateway's cut is followed
	res, err := a.found(ctx, c, clusterspec.FoundingRequest(f), key, createOptions{wait: true, timeout: opts.timeout})
	if err != nil {
		return 0, a.withResume(err, key, 0)
	}
	var founded apitypes.FoundingResult
	if err := json.Unmarshal(res.Body, &founded); err != nil {
		return 0, fmt.Errorf("k8sapi's answer to POST /clusters is not what this CLI expects: %w", err)
	}
	fmt.Fprintf(a.stdout, "cluster %d (%s) founded (Idempotency-Key %s)\n", founded.ClusterID, founded.Name, key)
	if _, _, err := c.KeepSpec(ctx, founded.ClusterID, f); err != nil {
		return founded.ClusterID, err
	}
	return founded.ClusterID, a.withResume(a.waitActive(ctx, c, founded.ClusterID, opts.timeout), key, founded.ClusterID)
}

// waitActive waits until cluster id's founding is over.
func (a *app) waitActive(ctx context.Context, c *Client, id int64, timeout time.Duration) error {
	return a.poll(ctx, timeout, fmt.Sprintf("cluster %d to be active", id), func(ctx context.Context) (bool, error) {
		cl, _, err := c.GetCluster(ctx, id)
		switch {
		case err != nil:
			return false, err
		case cl.Status == "failed" || cl.Status == "deleting" || cl.Status == "deleted":
			return true, fmt.Errorf("cluster %d (%s) is %s: %s", cl.ID, cl.Name, cl.Status, cl.StatusReason)
		}
		return cl.Status == "active", nil
	})
}
