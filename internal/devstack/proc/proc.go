package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// MissingDependencyError names a program the local stack needs and how to
// install it. Callers print it as one line and exit non-zero.
type MissingDependencyError struct {
	What    string // e.g. "PostgreSQL server binaries (initdb, postgres)"
	Install string // e.g. "apt-get install postgresql"
}

func (e *MissingDependencyError) Error() string {
	return fmt.Sprintf("missing dependency: %s not found; install it with: %s", e.What, e.Install)
}

// Process is a child started in its own process group. Its group is killed on
// Stop, and the kernel signals it if we die first (Pdeathsig), so neither a
// clean shutdown nor a crash of the parent leaves it behind.
type Process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // exit status, valid after done is closed
}

// Start starts cmd in a new process group with a parent-death signal.
// The output is written to out (nil discards it).
func Start(name string, cmd *exec.Cmd, out io.Writer, deathSig syscall.Signal) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = deathSig
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit status; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends sig to the process group, waits up to grace, then kills the
// group. It is safe to call more than once, and on a nil Process.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// The leader is gone; make sure no straggler of its group survives it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// FreePort asks the kernel for an unused loopback TCP port. The port is free
// when this returns; a tiny race with other programs remains and is accepted
// for a local stack.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitFor polls ready every 100 ms until it returns nil, ctx ends, timeout
// passes, or the process (if any) exits.
func WaitFor(ctx context.Context, what string, timeout time.Duration, p *Process, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		var exited <-chan struct{}
		if p != nil {
			exited = p.done
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v", what, p.err)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w", what, timeout, errors.Join(ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HTTPAnswers reports whether anything speaks HTTP at url (any status).
func HTTPAnswers(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// LogWriter turns a child's output into debug log lines prefixed with its
// name, so `make local` stays quiet unless asked (LOG_LEVEL=debug).
type LogWriter struct {
	Log  *slog.Logger
	Name string
}

func (w LogWriter) Write(b []byte) (int, error) {
	w.Log.Debug(string(trimNewline(b)), "proc", w.Name)
	return len(b), nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// LookPath is exec.LookPath plus extra directories to try.
func LookPath(name string, extra ...string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range extra {
		if p := dir + string(os.PathSeparator) + name; IsExecutable(p) {
			return p, true
		}
	}
	return "", false
}

// IsExecutable reports whether p is a file someone may execute.
func IsExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
