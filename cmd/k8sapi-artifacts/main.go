// Command k8sapi-artifacts prints the files nodes download for the default
// versions on every architecture, as internal/bundle's table has them: one
// line each, "<manifest name> <URL> <published digest URL> <entry there, or
// ->". scripts/pin-artifacts.sh reads it to pin them.
package main

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/bundle"
)

func main() {
	fmt.Print(bundle.PinPlan(bundle.DefaultArtifacts(), bundle.DefaultKubernetesVersion))
}
