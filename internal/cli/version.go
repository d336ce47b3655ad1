package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the CLI's release, set at build time
// (-ldflags "-X github.com/excloud/k8sapi/internal/cli.Version=v1.2.3");
// a build from a checkout says "dev" and its commit.
var Version = "dev"

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version, the commit it was built from and its Go",
		Args:  cobra.NoArgs,
		RunE: a.run(func(_ context.Context, _ *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "k8sapi %s (commit %s, %s %s/%s)\n", Version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		}),
	}
}

// buildCommit is the VCS revision the binary was built from (short, with
// "-dirty" for a modified tree), "unknown" when the build recorded none.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	return rev + dirty
}
