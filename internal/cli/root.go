// Package cli is k8sapi, the operator's command line: it founds, lists,
// describes and deletes clusters and hands out kubeconfigs through the
// API's operator routes. cmd/k8sapi is its main; no Lambda function links
// it (it brings cobra and client-go's kubeconfig loader).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitOK       = 0
	exitAPIError = 1 // the API refused, or could not be reached
	exitUsage    = 2 // the command line was wrong
)

// app is one run of the CLI: its streams, environment and clock, so tests
// drive it without a process.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	terminal       bool          // stdout is a terminal: --wait redraws in place
	pollEvery      time.Duration // --wait's polling interval
	home           string        // the user's home (~/.kube/config)
	cacheDir       string        // the user's cache directory (exec credentials)

	flags      settings
	configPath string

	ctx  context.Context // nil: context.Background; Main's ends on Ctrl-C
	args []string        // the command line, for a resume command
}

// Main runs the CLI with args (without the program name) and returns the
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(home, ".cache")
	}
	// Ctrl-C ends the context rather than the process: a wait that is
	// interrupted still prints how to resume it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdout: stdout, stderr: stderr, getenv: os.Getenv, now: time.Now,
		terminal: isTerminal(stdout), pollEvery: 2 * time.Second, home: home, ctx: ctx, cacheDir: cache}
	return a.main(args)
}

func (a *app) main(args []string) int {
	a.args = args
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(a.stderr, "Error:", err)
	var run *runError
	if errors.As(err, &run) {
		return exitAPIError
	}
	fmt.Fprintln(a.stderr, "Run 'k8sapi --help' for usage.")
	return exitUsage
}

// runError is a failure after the command line was accepted: an API
// error, a network error, a file that could not be written.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// run adapts a command's body to cobra: its usage errors stay usage errors
// (exit 2), every other error is a run error (exit 1).
func (a *app) run(fn func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd.Context(), cmd, args)
		var usage *usageError
		if err == nil || errors.As(err, &usage) {
			return err
		}
		return &runError{err}
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "k8sapi",
		Short:         "Found and run Kubernetes clusters through k8sapi",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.flags.URL, "url", "", "k8sapi's URL (else K8SAPI_URL, else url: in the config file)")
	pf.StringVar(&a.flags.Token, "token", "", "operator bearer token (else K8SAPI_TOKEN, else token: in the config file)")
	pf.StringVar(&a.configPath, "config", "", "config file (default "+defaultConfigPath()+")")
	root.AddCommand(a.createCommand(), a.getCommand(), a.describeCommand(), a.deleteCommand(),
		a.kubeconfigCommand(), a.credentialCommand(), a.rebootstrapCommand(), a.etcdSnapshotsCommand(), a.nodePoolsCommand(), a.nodesCommand(), a.upgradeCommand())
	return root
}

// client is the API client the settings name.
func (a *app) client() (*Client, error) {
	path, named := a.configPath, a.configPath != ""
	if !named {
		path = defaultConfigPath()
	}
	s, err := resolveSettings(a.flags, a.getenv, path, named)
	if err != nil {
		return nil, err
	}
	return &Client{BaseURL: s.URL, Token: s.Token}, nil
}

// clientFor is the API client and the cluster id an argument names.
func (a *app) clientFor(arg string) (*Client, int64, error) {
	id, err := parseID("cluster id", arg)
	if err != nil {
		return nil, 0, err
	}
	c, err := a.client()
	return c, id, err
}

// parseID reads a cluster or VM id argument.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usageErrorf("%s %q is not a positive integer", what, s)
	}
	return id, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
