// Command k8sapi-artifacts prints the files nodes download for the default
// versions on every architecture, as internal/artifacts' table has them: one
// line each, "<manifest name> <URL> <published digest URL> <entry there, or
// ->". scripts/pin-artifacts.sh reads it to pin them.
package main

import (
	"fmt"

	"github.com/excloud/k8sapi/internal/artifacts"
)

func main() {
	fmt.Print(artifacts.PinPlan(artifacts.Default(), artifacts.DefaultKubernetesVersion))
}
