package lambdaruntime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// BuildFunctions builds the host bootstrap binary of every function in t
// (or only those named) with one `go build`, so shared packages compile
// once, and returns binDir/<LogicalId>/bootstrap by logical id. root is the
// module root (where template.yaml is).
func BuildFunctions(ctx context.Context, root string, t *samtemplate.Template, binDir string, only ...string) (map[string]string, error) {
	var fns []samtemplate.Function
	for _, f := range t.Functions {
		if len(only) == 0 || contains(only, f.LogicalID) {
			fns = append(fns, f)
		}
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("no function named %s in the template", strings.Join(only, ", "))
	}
	// Absolute: each function runs with its own directory as working
	// directory (LAMBDA_TASK_ROOT), where a relative path would not resolve.
	binDir, err := filepath.Abs(binDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(binDir, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)

	args := []string{"build", "-tags", BuildTags, "-o", staging + string(os.PathSeparator)}
	seen := map[string]bool{}
	for _, f := range fns {
		if !seen[f.CodeURI] {
			seen[f.CodeURI] = true
			args = append(args, "./"+f.CodeURI)
		}
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	// Static, like the Lambda build; the host's OS and architecture.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building functions: %w\n%s", err, out)
	}
	bins := map[string]string{}
	for _, f := range fns {
		dir := filepath.Join(binDir, f.LogicalID)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, "bootstrap")
		_ = os.Remove(dst)
		// Hard links: two functions may share one CodeUri.
		if err := os.Link(filepath.Join(staging, path.Base(f.CodeURI)), dst); err != nil {
			return nil, fmt.Errorf("placing %s's binary: %w", f.LogicalID, err)
		}
		bins[f.LogicalID] = dst
	}
	return bins, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// BuildTags are the Lambda build's tags (the Makefile's LAMBDA_GOFLAGS), so
// a local function is the binary AWS runs: no RPC fallback in
// aws-lambda-go, no HTTP/2 in net/http.
const BuildTags = "lambda.norpc,nethttpomithttp2"
