// Command containerd-shim-runc-v2 is the per-pod shim containerd starts to
// drive runc (the io.containerd.runc.v2 runtime).
package main

import (
	"context"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin" // the task service
	"github.com/containerd/containerd/v2/pkg/shim"
)

// runtimeName is the runtime type containerd's CRI config names.
const runtimeName = "io.containerd.runc.v2"

func main() {
	shim.Run(context.Background(), manager.NewShimManager(runtimeName))
}
