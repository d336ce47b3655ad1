// Command ctr is containerd's own client, installed beside containerd for
// loading images and inspecting a node by hand.
package main

import (
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/cmd/ctr/app"
)

func main() {
	if err := app.New().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "ctr:", err)
		os.Exit(1)
	}
}
