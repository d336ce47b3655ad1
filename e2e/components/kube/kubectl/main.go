// Command kubectl is the client the node proof installs on every machine
// (the addons script applies the cluster's addons with it), linked from
// k8s.io/kubectl's command tree.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec and OIDC credential plugins in kubeconfigs
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// kubectl prints its own errors (with hints); cli.Run would print them twice.
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}
