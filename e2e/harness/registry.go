package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// StartRegistry runs the built OCI registry (distribution) in namespace ns,
// serving plain HTTP on addr with its blobs under dir.
func StartRegistry(r *Run, binDir, ns, addr, dir string) (*Proc, error) {
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: false
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return nil, err
	}
	argv := []string{filepath.Join(binDir, "registry"), "serve", path}
	return r.Start("registry", Host{NS: ns}, dir, os.Environ(), argv)
}
