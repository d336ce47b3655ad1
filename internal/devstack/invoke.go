package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/localpg"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// InvokeOptions configure Invoke.
type InvokeOptions struct {
	Root        string // module root
	Function    string // logical id, e.g. HealthFunction
	EventFile   string // an API Gateway v2 event, e.g. events/health.json
	EnvVarsFile string // optional: a `sam local --env-vars` JSON file
	Log         *slog.Logger
	Out         io.Writer // the response payload
	FunctionOut io.Writer // the function's own output
}

// Invoke builds one function, runs its real bootstrap once through the
// local Runtime API with the event, prints the response payload and stops,
// like `sam local invoke -e`. The environment is template.yaml's, then the
// running local stack's (.local/stack.env) if any, then EnvVarsFile's.
func Invoke(ctx context.Context, opt InvokeOptions) error {
	tmpl, err := samtemplate.LoadTemplate(filepath.Join(opt.Root, "template.yaml"))
	if err != nil {
		return err
	}
	fn, ok := tmpl.Function(opt.Function)
	if !ok {
		var names []string
		for _, f := range tmpl.Functions {
			names = append(names, f.LogicalID)
		}
		return fmt.Errorf("no function %q in template.yaml (have: %s)", opt.Function, strings.Join(names, ", "))
	}
	event, err := os.ReadFile(opt.EventFile)
	if err != nil {
		return fmt.Errorf("reading the event: %w", err)
	}
	if !json.Valid(event) {
		return fmt.Errorf("%s is not JSON", opt.EventFile)
	}
	env, err := invokeEnv(opt, fn)
	if err != nil {
		return err
	}
	bins, err := lambdaruntime.BuildFunctions(ctx, opt.Root, tmpl, filepath.Join(opt.Root, ".local", "bin"), fn.LogicalID)
	if err != nil {
		return err
	}
	r, err := lambdaruntime.NewRunner(lambdaruntime.FunctionSpec{Function: fn, Binary: bins[fn.LogicalID], Env: env}, opt.Log, opt.FunctionOut)
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := r.Invoke(ctx, event)
	var fe *lambdaruntime.FunctionError
	if errors.As(err, &fe) {
		// sam local invoke prints the function's error object as the result.
		b, _ := json.Marshal(map[string]string{"errorType": fe.ErrorType, "errorMessage": fe.ErrorMessage})
		out = b
	} else if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	pretty.WriteByte('\n')
	if _, werr := opt.Out.Write(pretty.Bytes()); werr != nil {
		return werr
	}
	return err
}

// invokeEnv layers the overrides: what the running stack gives fn
// (FunctionEnv), else a local DATABASE_URL (the pool connects lazily, so
// requests that need no database work without one); then the env-vars file.
func invokeEnv(opt InvokeOptions, fn samtemplate.Function) (map[string]string, error) {
	env := map[string]string{}
	if st, err := ReadStackEnv(filepath.Join(opt.Root, ".local", StackEnvFile)); err == nil {
		if env, err = FunctionEnv(fn, StackFromEnv(st)); err != nil {
			return nil, err
		}
	} else {
		env["DATABASE_URL"] = localpg.DefaultLocalPostgres
		env["LOCAL_RUN"] = "true" // a local database: no TLS to verify
		if v := os.Getenv("DATABASE_URL"); v != "" {
			env["DATABASE_URL"] = v
		}
	}
	if opt.EnvVarsFile == "" {
		return env, nil
	}
	b, err := os.ReadFile(opt.EnvVarsFile)
	if err != nil {
		return nil, fmt.Errorf("reading env vars: %w", err)
	}
	// SAM's format: {"Parameters": {...all functions...}, "<LogicalId>": {...}}.
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("%s: want {\"Parameters\": {...}, \"<LogicalId>\": {...}} of strings: %w", opt.EnvVarsFile, err)
	}
	for _, section := range []string{"Parameters", opt.Function} {
		for k, v := range file[section] {
			env[k] = v
		}
	}
	return env, nil
}
