// Command etcdutl is etcd's offline tool, shipped beside etcd and etcdctl
// in the release archive the node proof's mirror serves: a restored
// cluster's node restores its member from a snapshot with it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
)

func main() {
	root := &cobra.Command{Use: "etcdutl", Short: "etcd's offline tool (snapshots, defragmentation)", SilenceUsage: true}
	root.PersistentFlags().StringVarP(&etcdutl.OutputFormat, "write-out", "w", "simple", "output format (fields, json, protobuf, simple, table)")
	root.AddCommand(etcdutl.NewSnapshotCommand(), etcdutl.NewDefragCommand(), etcdutl.NewVersionCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
