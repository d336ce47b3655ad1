package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fieldKind is the JSON type of a founding field, and so its flag's type.
type fieldKind int

const (
	intField fieldKind = iota
	stringField
	boolField
	intListField
	snapshotRefField
)

// createField ties a flag of `create cluster` to a field of
// CreateClusterRequest.
type createField struct {
	flag, field string
	kind        fieldKind
	required    bool
	values      []string // the field's enum, for completion
	usage       string
}

// createFields is every founding field as a flag: the one list of them.
// A flag left unset sends no field, so the API's defaults apply.
var createFields = []createField{
	{flag: "count", field: "control_plane_count", kind: intField, values: []string{"1", "3"}, usage: "control-plane VMs (etcd members): 1 or 3 (default 1)"},
	{flag: "image", field: "control_plane_image_id", kind: intField, required: true, usage: "compute image id of the VMs"},
	{flag: "instance-type", field: "control_plane_instance_type", kind: stringField, required: true, usage: "instance type of the VMs, e.g. c1.large"},
	{flag: "subnet", field: "subnet_id", kind: intField, required: true, usage: "subnet id (of your org)"},
	{flag: "zone", field: "zone_id", kind: intField, usage: "zone id (default 1)"},
	{flag: "security-group", field: "security_group_ids", kind: intListField, usage: "security group ids, comma-separated or repeated (none: founding makes one)"},
	{flag: "public-ipv4", field: "allocate_public_ipv4", kind: boolField, usage: "give each VM a public IPv4 address"},
	{flag: "ssh-pubkey", field: "ssh_pubkey", kind: stringField, usage: "one OpenSSH public key line for the VMs"},
	{flag: "root-volume-gib", field: "root_volume_size_gib", kind: intField, usage: "root volume size in GiB, 10-2048 (default: the image's)"},
	{flag: "key-algorithm", field: "key_algorithm", kind: stringField, values: []string{"ecdsa-p256", "rsa-2048"}, usage: "algorithm of every key of the cluster (default ecdsa-p256)"},
	{flag: "cni", field: "cni", kind: stringField, values: []string{"cilium", "bridge", "flannel"}, usage: "pod network: cilium, bridge or flannel (default cilium); node pools need cilium or flannel"},
	{flag: "kubernetes-version", field: "kubernetes_version", kind: stringField, values: []string{"v1.35.4", "v1.36.3"},
		usage: "Kubernetes version of the cluster (default: the deployment's; GET /kubernetes-versions lists them)"},
	{flag: "restore-from", field: "restore_from", kind: snapshotRefField, usage: "CLUSTER:SNAPSHOT, found the cluster from that uploaded etcd snapshot (its CAs and keys are kept)"},
}

// register adds f's flag to fs and returns what reads its value.
func (f createField) register(fs *pflag.FlagSet) func() any {
	switch f.kind {
	case intField:
		v := fs.Int64(f.flag, 0, f.usage)
		return func() any { return *v }
	case boolField:
		v := fs.Bool(f.flag, false, f.usage)
		return func() any { return *v }
	case intListField:
		v := fs.Int64Slice(f.flag, nil, f.usage)
		return func() any { return *v }
	case snapshotRefField:
		v := &snapshotRef{}
		fs.Var(v, f.flag, f.usage)
		return func() any { return map[string]int64{"cluster_id": v.cluster, "snapshot_id": v.snapshot} }
	}
	v := fs.String(f.flag, "", f.usage)
	return func() any { return *v }
}

// snapshotRef is a --restore-from value, CLUSTER:SNAPSHOT (two ids).
type snapshotRef struct{ cluster, snapshot int64 }

func (r *snapshotRef) String() string {
	if r.cluster == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%d", r.cluster, r.snapshot)
}

func (r *snapshotRef) Set(v string) error {
	if _, err := fmt.Sscanf(v, "%d:%d", &r.cluster, &r.snapshot); err != nil || r.String() != v {
		return fmt.Errorf("want CLUSTER:SNAPSHOT, two ids (k8sapi etcd-snapshots list CLUSTER), not %q", v)
	}
	return nil
}

func (r *snapshotRef) Type() string { return "CLUSTER:SNAPSHOT" }

// createRequest is the founding body: the fields whose flags were set.
type createRequest map[string]func() any

func (r createRequest) body(fs *pflag.FlagSet) map[string]any {
	body := map[string]any{}
	for _, f := range createFields {
		if fs.Changed(f.flag) {
			body[f.field] = r[f.flag]()
		}
	}
	return body
}

type createOptions struct {
	wait           bool
	timeout        time.Duration
	idempotencyKey string
	output         output
}

func (a *app) createCommand() *cobra.Command {
	create := &cobra.Command{Use: "create", Short: "Found a cluster"}
	create.AddCommand(a.createClusterCommand())
	return create
}

func (a *app) createClusterCommand() *cobra.Command {
	var opts createOptions
	req := createRequest{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Found a cluster",
		Example: "  k8sapi create cluster --count 3 --image 1 --instance-type c1.large --subnet 1 --wait\n" +
			"  k8sapi create cluster --image 1 --instance-type c1.large --subnet 1 --cni bridge -o json > found.json",
		Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return a.createCluster(ctx, req.body(cmd.Flags()), opts)
		}),
	}
	for _, f := range createFields {
		req[f.flag] = f.register(cmd.Flags())
		if f.required {
			_ = cmd.MarkFlagRequired(f.flag)
		}
		if f.values != nil {
			_ = cmd.RegisterFlagCompletionFunc(f.flag, cobra.FixedCompletions(f.values, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	cmd.Flags().BoolVar(&opts.wait, "wait", false, "wait until every node is ready, showing each node's phase")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 30*time.Minute, "how long --wait waits")
	cmd.Flags().StringVar(&opts.idempotencyKey, "idempotency-key", "", "Idempotency-Key of the founding (default: a new random one; repeat it to retry safely)")
	addOutputFlag(cmd, &opts.output, outputJSON, outputYAML)
	return cmd
}

func (a *app) createCluster(ctx context.Context, body map[string]any, opts createOptions) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	key := opts.idempotencyKey
	if key == "" {
		key = "k8sapi-cli-" + rand.Text()
	}
	res, err := a.found(ctx, c, body, key, opts)
	if err != nil {
		return a.withResume(err, key, 0)
	}
	id, err := a.reportFounding(res, key, opts.output)
	if err != nil {
		return err
	}
	if opts.wait {
		a.progressToStderr = opts.output.structured()
		if err := a.withResume(a.waitReady(ctx, c, id, opts.timeout), key, id); err != nil {
			return err
		}
	}
	if !opts.output.structured() {
		a.nextStep(id)
	}
	return nil
}

// nextStep tells where to go from a founding: the founding's own
// kubeconfig is shown only with -o json|yaml (an admin credential kept
// nowhere), and this makes one here.
func (a *app) nextStep(id int64) {
	fmt.Fprintf(a.stdout, "next: k8sapi kubeconfig %d --merge   (then kubectl get nodes)\n", id)
}

// found asks for the founding; with --wait a gateway's 502/503/504 (the
// founding goes on without the call) or a founding still claimed by the
// cut-off call is followed by asking again with the same Idempotency-Key,
// which answers the founding's outcome once it is recorded, until
// --timeout.
func (a *app) found(ctx context.Context, c *Client, body any, key string, opts createOptions) (*response, error) {
	if !opts.wait {
		return c.CreateCluster(ctx, body, key)
	}
	var res *response
	err := a.poll(ctx, opts.timeout, "the founding under Idempotency-Key "+key, func(ctx context.Context) (bool, error) {
		var err error
		res, err = c.CreateCluster(ctx, body, key)
		if gatewayCut(err) || isCode(err, apperr.FoundingInProgress.String()) {
			fmt.Fprintf(a.progressOut(), "%s the founding goes on (%v); asking again with Idempotency-Key %s\n", a.now().UTC().Format(time.TimeOnly), err, key)
			return false, nil
		}
		return err == nil, err
	})
	return res, err
}

// reportFounding prints the founding's answer and returns the cluster id.
// The kubeconfig of a 201 is printed only with -o json|yaml: it is shown
// once and `k8sapi kubeconfig` mints named ones on demand.
func (a *app) reportFounding(res *response, key string, o output) (int64, error) {
	var f apitypes.FoundingResult
	if err := json.Unmarshal(res.Body, &f); err != nil {
		return 0, fmt.Errorf("k8sapi's answer to POST /clusters is not what this CLI expects: %w", err)
	}
	if o.structured() {
		return f.ClusterID, o.printDocument(a.stdout, res.Body)
	}
	if res.Status == http.StatusAccepted {
		fmt.Fprintf(a.stdout, "cluster %d (%s) is still founding; it goes on without this call (Idempotency-Key %s)\n", f.ClusterID, f.Name, res.Header.Get("Idempotency-Key"))
		return f.ClusterID, nil
	}
	replayed := ""
	if res.Header.Get("Idempotent-Replayed") == "true" {
		replayed = " (replayed: founded earlier under Idempotency-Key " + key + ")"
	}
	fmt.Fprintf(a.stdout, "cluster %d (%s) founded%s: %d control-plane VMs %s, endpoint https://%s:6443\n",
		f.ClusterID, f.Name, replayed, len(f.ControlPlaneVMIDs), joinIDs(f.ControlPlaneVMIDs), f.ControlPlaneDNSName)
	if !f.DNSConfigured {
		fmt.Fprintf(a.stdout, "DNS not configured: %s (the records to create: k8sapi describe cluster %d)\n", f.DNSError, f.ClusterID)
	}
	return f.ClusterID, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, " ") + "]"
}
