// Command registry is the OCI registry the node proof serves its images
// from (the cluster's IMAGE_REGISTRY), distribution's registry with only
// the filesystem storage driver: no cloud storage, no auth.
package main

import (
	"fmt"
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem" // rootdirectory storage
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}
