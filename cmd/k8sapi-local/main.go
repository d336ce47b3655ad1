// Command k8sapi-local runs the local stack (make local) or invokes one
// function once (make invoke). LOCAL ONLY; the logic is in internal/devstack.
//
//	k8sapi-local [-port 3000] [-boot-vms]
//	k8sapi-local invoke [-env-vars env.local.json] FUNCTION EVENT_FILE
//	k8sapi-local functions    (one "LogicalId CodeUri" line per function)
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var level slog.Level
	_ = level.UnmarshalText([]byte(os.Getenv("LOG_LEVEL")))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "invoke":
		err = invoke(ctx, log, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "functions":
		err = listFunctions()
	default:
		port := flag.Int("port", 3000, "gateway port on 127.0.0.1")
		database := flag.String("database", "", "database on the Postgres server (created and migrated if missing); default "+devstack.LocalDatabase+", or "+devstack.LocalDatabase+"_<port> off port 3000")
		bootVMs := flag.Bool("boot-vms", false, "each VM the simulator creates boots as a stand-in: fetches its bundle and reports its phases (nothing runs on a machine)")
		flag.Parse()
		err = devstack.Run(ctx, devstack.Options{Root: ".", Port: *port, Database: *database, BootVMs: *bootVMs, Log: log, Out: os.Stdout, FunctionOut: os.Stderr})
	}
	if err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "k8sapi-local:", err)
		os.Exit(1)
	}
}

// listFunctions prints template.yaml's functions, deployment hooks too, for
// scripts (.ci/check-lambda-builds).
func listFunctions() error {
	t, err := samtemplate.LoadTemplate("template.yaml")
	if err != nil {
		return err
	}
	for _, f := range append(t.Functions, t.Hooks...) {
		fmt.Println(f.LogicalID, f.CodeURI)
	}
	return nil
}

func invoke(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("invoke", flag.ExitOnError)
	envVars := fs.String("env-vars", "", "JSON file of environment overrides, as for sam local --env-vars")
	_ = fs.Parse(args)
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: k8sapi-local invoke [-env-vars file] FUNCTION EVENT_FILE")
	}
	return devstack.Invoke(ctx, devstack.InvokeOptions{
		Root: ".", Function: fs.Arg(0), EventFile: fs.Arg(1), EnvVarsFile: *envVars,
		Log: log, Out: os.Stdout, FunctionOut: os.Stderr,
	})
}
