// Command containerd is the container runtime the node proof installs on
// every machine, linked from containerd v2's command package with its
// built-in plugins (CRI included).
package main

import (
	"fmt"
	"os"

	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins" // snapshotters, CRI, runtime plugins
	"github.com/containerd/containerd/v2/cmd/containerd/command"
)

func main() {
	if err := command.App().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "containerd:", err)
		os.Exit(1)
	}
}
