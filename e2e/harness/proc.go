package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one component process running inside a node's namespace.
type Proc struct {
	Name    string // e.g. n1/etcd
	LogPath string
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// Host says where a process runs: a network namespace (empty: the
// harness's own) and, inside one, a hostname of its own (a UTS namespace),
// as on a VM.
type Host struct {
	NS       string
	Hostname string
}

// Start runs argv on host (ip netns exec and unshare exec the program, so
// the pid is the component's own) with its output in logPath. The process
// gets its own process group and is killed if the harness dies.
func Start(name string, host Host, dir, logPath string, env, argv []string) (*Proc, error) {
	return start(name, host, dir, logPath, env, argv, false)
}

// StartPiped is Start with the output reaching the log through a pipe the
// harness copies. systemd-nspawn forwards a machine's console only to an
// output it can poll, which a regular file is not: given the log file
// itself, it forwards nothing until it exits, the console's buffer fills
// and the machine's journald blocks writing to it.
func StartPiped(name string, host Host, dir, logPath string, env, argv []string) (*Proc, error) {
	return start(name, host, dir, logPath, env, argv, true)
}

// pipedWriter hides the log file's *os.File, so exec gives the process a
// pipe and copies it into the file (Wait waits for the copy).
type pipedWriter struct{ io.Writer }

func start(name string, host Host, dir, logPath string, env, argv []string, piped bool) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "### %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	if len(argv) == 0 {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: empty command", name)
	}
	full := argv
	if host.Hostname != "" {
		full = append([]string{"unshare", "--uts", "--", "sh", "-c", `hostname "$0" && exec "$@"`, host.Hostname}, full...)
	}
	if host.NS != "" {
		full = append([]string{"ip", "netns", "exec", host.NS}, full...)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	if piped {
		out := pipedWriter{logf}
		cmd.Stdout, cmd.Stderr = out, out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startOnSpawner(cmd); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL and waits for the exit. It returns how long it took.
func (p *Proc) Stop(grace time.Duration) time.Duration {
	start := time.Now()
	if done, _ := p.Exited(); done {
		return 0
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start)
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
	return time.Since(start)
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string { return TailFile(p.LogPath, n) }

// TailFile returns the last n lines of a file (or why it could not).
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const max = 256 << 10
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	if st.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return err.Error()
		}
	}
	b, err := io.ReadAll(f)
	if err != nil && !errors.Is(err, io.EOF) {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Pdeathsig fires when the *thread* that forked the child exits, not the
// process. Dialer ends threads on purpose (a thread moved into a node's
// namespace is never reused), so children are forked from one goroutine
// locked to a thread that lives as long as the harness.
var (
	spawnOnce sync.Once
	spawnReq  chan spawnJob
)

type spawnJob struct {
	cmd  *exec.Cmd
	done chan error
}

func startOnSpawner(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReq = make(chan spawnJob)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread is the children's parent
			for j := range spawnReq {
				j.done <- j.cmd.Start()
			}
		}()
	})
	j := spawnJob{cmd: cmd, done: make(chan error, 1)}
	spawnReq <- j
	return <-j.done
}

// errorLine matches the lines that say why a component failed: cobra's
// "Error:", klog's E/F lines, etcd's JSON error levels, Go panics.
var errorLine = regexp.MustCompile(`^(Error:|error:|[EF]\d{4} |panic:|fatal error:)|"level":"(error|fatal|panic)"`)

// ErrorLines returns the first n lines of a log that say why it failed.
func ErrorLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		if errorLine.MatchString(sc.Text()) {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}
