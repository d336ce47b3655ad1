package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/spf13/cobra"
)

// etcdSnapshotsCommand is `k8sapi etcd-snapshots create|list ID`.
func (a *app) etcdSnapshotsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "etcd-snapshots", Short: "Take a cluster's etcd snapshot now, or list its snapshots"}
	cmd.AddCommand(a.createEtcdSnapshotCommand(), a.listEtcdSnapshotsCommand())
	return cmd
}

func (a *app) createEtcdSnapshotCommand() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "create CLUSTER",
		Short:             "Ask for an etcd snapshot of a cluster now; its chosen node takes and uploads it within minutes",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			c, id, err := a.clientFor(ctx, args[0])
			if err != nil {
				return err
			}
			s, res, err := c.TakeEtcdSnapshot(ctx, id)
			if err != nil {
				return err
			}
			if o.structured() {
				return o.printDocument(a.stdout, res.Body)
			}
			fmt.Fprintf(a.stdout, "etcd snapshot %d of cluster %d: %s, taken by vm %d into %s\n",
				s.ID, s.ClusterID, s.State, s.NodeVMID, s.ObjectKey)
			return nil
		}),
	}
	addOutputFlag(cmd, &o, outputJSON, outputYAML)
	return cmd
}

func (a *app) listEtcdSnapshotsCommand() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "list CLUSTER",
		Short:             "List a cluster's etcd snapshots, newest first",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeClusterIDs,
		RunE: a.run(func(ctx context.Context, _ *cobra.Command, args []string) error {
			c, id, err := a.clientFor(ctx, args[0])
			if err != nil {
				return err
			}
			list, res, err := c.EtcdSnapshots(ctx, id)
			if err != nil {
				return err
			}
			if o.structured() {
				return o.printDocument(a.stdout, res.Body)
			}
			return a.printEtcdSnapshots(list, o)
		}),
	}
	addOutputFlag(cmd, &o, outputWide, outputJSON, outputYAML)
	return cmd
}

func (a *app) printEtcdSnapshots(list []apitypes.EtcdSnapshot, o output) error {
	headers := []string{"ID", "STATE", "TRIGGER", "NODE VM", "SIZE", "SHA256", "AGE"}
	if o == outputWide {
		headers = append(headers, "REQUESTED BY", "OBJECT KEY", "FAILURE")
	}
	t := newTable(a.stdout, headers...)
	now := a.now()
	for _, s := range list {
		size, sum := "-", "-"
		if s.SizeBytes != nil {
			size = strconv.FormatInt(*s.SizeBytes, 10)
		}
		if s.SHA256 != nil {
			sum = *s.SHA256
			if o != outputWide && len(sum) > 12 {
				sum = sum[:12]
			}
		}
		cells := []string{strconv.FormatInt(s.ID, 10), s.State, s.Trigger, strconv.FormatInt(s.NodeVMID, 10), size, sum, age(now, s.RequestedAt)}
		if o == outputWide {
			failure := "-"
			if s.Failure != nil {
				failure = *s.Failure
			}
			cells = append(cells, s.RequestedBy, s.ObjectKey, failure)
		}
		t.row(cells...)
	}
	return t.flush()
}
