// Command k8sapi is the operator's command line for k8sapi: found, list,
// describe and delete clusters, and hand out kubeconfigs. See internal/cli.
package main

import (
	"os"

	"github.com/excloud/k8sapi/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
