// Package cli is k8sapi, the operator's command line: it applies cluster
// files (apply.go, over internal/clusterspec's rules and plan), founds,
// lists, describes, follows and deletes clusters, and hands out
// kubeconfigs through the API's operator routes (docs/CLI.md). A cluster
// argument is an id or a name (names.go). cmd/k8sapi is its main; no
// Lambda function links it (it brings cobra, client-go's kubeconfig
// loader and, through clusterspec, the server's request rules).
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
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
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
	stdin          io.Reader // nil: none (apply then acts only with --yes)
	stdinTerminal  bool      // stdin is a terminal: apply may ask
	getenv         func(string) string
	now            func() time.Time
	terminal       bool // stdout is a terminal: --wait redraws in place
	// progressToStderr: stdout carries a document (-o json|yaml), so a
	// wait's progress lines go to stderr.
	progressToStderr bool
	pollEvery        time.Duration // --wait's polling interval
	home             string        // the user's home (~/.kube/config)
	cacheDir         string        // the user's cache directory (exec credentials)

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
	a := &app{stdout: stdout, stderr: stderr, stdin: os.Stdin, stdinTerminal: isTerminal(os.Stdin), getenv: os.Getenv, now: time.Now,
		terminal: isStdTerminal(stdout), pollEvery: 2 * time.Second, home: home, ctx: ctx, cacheDir: cache}
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
	fmt.Fprintln(a.stderr, "Error:", withHint(err))
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
	defer refuseUnknownSubcommands(root)
	root.AddCommand(a.applyCommand(), a.createCommand(), a.getCommand(), a.describeCommand(), a.deleteCommand(),
		a.kubeconfigCommand(), a.credentialCommand(), a.rebootstrapCommand(), a.etcdSnapshotsCommand(), a.nodePoolsCommand(), a.nodesCommand(), a.waitCommand(), a.versionCommand(),
		a.scaleCommand(), a.setCommand(), a.upgradeCommand(), a.rotateCACommand())
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (get, node-pools, ...) refuse a word that is none of them, with
// cobra's suggestions: left alone, `get clsuters` prints help and exits 0.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() || !cmd.HasParent() {
		return // the root: cobra refuses unknown commands there itself
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply itself
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageErrorf("%s (k8sapi %s --help lists them)", msg, cmd.Name())
	}
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

// clientFor is the API client and the cluster id an argument (an id or
// a name) names.
func (a *app) clientFor(ctx context.Context, arg string) (*Client, int64, error) {
	c, err := a.client()
	if err != nil {
		return nil, 0, err
	}
	id, err := clusterID(ctx, c, arg)
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

// isTerminal reports whether f is a terminal (not merely a character
// device: /dev/null is one too, and a CLI run with </dev/null must not
// ask).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// isStdTerminal is isTerminal for a writer that may be no file.
func isStdTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
