package harness

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StopGrace is how long a component gets between SIGTERM and SIGKILL.
// kube-apiserver drains on SIGTERM (shutdown-delay, in-flight requests);
// the proof does not wait for that.
const StopGrace = 10 * time.Second

// Run is one test's hosts and processes, with its logs in LogDir and the
// nodes' root folders under WorkDir.
type Run struct {
	ID      string // namespace name prefix: NamePrefix<pid>-<tag>
	LogDir  string
	WorkDir string
	Net     *Network

	mu       sync.Mutex
	procs    []*Proc
	suspects map[string]bool
	stopped  bool
	machines []*Machine
	cleanups []func() error // run at teardown, last added first

	teardownOnce  sync.Once
	teardownLines []string
}

var (
	liveMu sync.Mutex
	live   = map[*Run]bool{}
	once   sync.Once
)

// NewRun makes a run's folders under e2eDir/.logs and e2eDir/.work and
// registers its teardown with t.Cleanup: every process stopped, namespaces
// deleted, and on failure the log tails of suspect or dead components
// printed. An interrupt (SIGINT, SIGTERM) tears down every live run too.
func NewRun(t testing.TB, e2eDir, tag string) *Run {
	t.Helper()
	stamp := time.Now().Format("20060102-150405")
	r := &Run{
		ID:       fmt.Sprintf("%s%d-%s", NamePrefix, os.Getpid(), tag),
		LogDir:   filepath.Join(e2eDir, ".logs", stamp+"-"+tag),
		WorkDir:  filepath.Join(e2eDir, ".work", "runs", stamp+"-"+tag),
		suspects: map[string]bool{},
	}
	for _, d := range []string{r.LogDir, r.WorkDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	liveMu.Lock()
	live[r] = true
	liveMu.Unlock()
	once.Do(watchSignals)
	t.Cleanup(func() {
		if t.Failed() {
			r.printTails(t)
		}
		for _, line := range r.Teardown() {
			t.Log(line)
		}
		t.Logf("logs: %s", r.LogDir)
	})
	return r
}

func watchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-ch
		fmt.Fprintf(os.Stderr, "e2e: %v: tearing down\n", s)
		liveMu.Lock()
		runs := make([]*Run, 0, len(live))
		for r := range live {
			runs = append(runs, r)
		}
		liveMu.Unlock()
		for _, r := range runs {
			r.Teardown()
		}
		os.Exit(2)
	}()
}

// SetNetwork records the run's network so teardown deletes it.
func (r *Run) SetNetwork(n *Network) {
	r.mu.Lock()
	r.Net = n
	r.mu.Unlock()
}

// Start runs a component on host; its log is LogDir/<name>.log with "/"
// in name replaced by "_".
func (r *Run) Start(name string, host Host, dir string, env, argv []string) (*Proc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, fmt.Errorf("run %s is torn down", r.ID)
	}
	logPath := filepath.Join(r.LogDir, fileName(name)+".log")
	p, err := Start(name, host, dir, logPath, env, argv)
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	return p, nil
}

func fileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '/' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Suspect marks a component whose log tail matters if the test fails.
func (r *Run) Suspect(name string) {
	r.mu.Lock()
	r.suspects[name] = true
	r.mu.Unlock()
}

// Unsuspect withdraws a mark set by Suspect.
func (r *Run) Unsuspect(name string) {
	r.mu.Lock()
	delete(r.suspects, name)
	r.mu.Unlock()
}

// Dead returns an error naming every component that has exited.
func (r *Run) Dead() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dead []string
	for _, p := range r.procs {
		if done, err := p.Exited(); done {
			dead = append(dead, fmt.Sprintf("%s (%v)", p.Name, err))
			r.suspects[p.Name] = true
		}
	}
	for _, m := range r.machines {
		if m.stopped() {
			continue // stopped on purpose (for good, or at teardown): not a failure
		}
		if done, err := m.Exited(); done {
			dead = append(dead, fmt.Sprintf("machine %s (%v)", m.Name, err))
			r.suspects[m.Name+"/console"] = true
		}
	}
	if len(dead) == 0 {
		return nil
	}
	return fmt.Errorf("components exited: %v", dead)
}

func (r *Run) printTails(t testing.TB) {
	r.mu.Lock()
	procs := append([]*Proc(nil), r.procs...)
	for _, m := range r.machines {
		procs = append(procs, m.current())
	}
	var names []string
	for n := range r.suspects {
		names = append(names, n)
	}
	r.mu.Unlock()
	sort.Strings(names)
	for _, p := range procs {
		done, _ := p.Exited()
		if !done && !r.suspects[p.Name] {
			continue
		}
		if errs := ErrorLines(p.LogPath, 5); errs != "" {
			t.Logf("---- first error lines of %s ----\n%s", p.Name, errs)
		}
		t.Logf("---- last 40 lines of %s (%s) ----\n%s", p.Name, p.LogPath, p.Tail(40))
	}
}

// Teardown stops every process (SIGTERM, StopGrace, SIGKILL) in the
// reverse of the order they were started, one kind of component at a time
// (the schedulers of every node together, then the controller managers,
// ... etcd, the stack), and deletes the namespaces. It is safe to call
// more than once, also concurrently, and returns what it did.
func (r *Run) Teardown() []string {
	// A second caller (the interrupt handler during t.Cleanup) waits for
	// the first to finish instead of exiting under it.
	r.teardownOnce.Do(func() { r.teardownLines = r.teardown() })
	return r.teardownLines
}

func (r *Run) teardown() []string {
	r.mu.Lock()
	r.stopped = true
	procs := r.procs
	r.procs = nil
	n := r.Net
	r.Net = nil
	machines, cleanups := r.machines, r.cleanups
	r.machines, r.cleanups = nil, nil
	r.mu.Unlock()

	lines := stopMachines(machines)
	for i := len(cleanups) - 1; i >= 0; i-- {
		if err := cleanups[i](); err != nil {
			lines = append(lines, err.Error())
		}
	}
	for _, wave := range stopWaves(procs) {
		var wg sync.WaitGroup
		var lmu sync.Mutex
		var waveLines []string
		for _, p := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := p.Stop(StopGrace)
				lmu.Lock()
				waveLines = append(waveLines, fmt.Sprintf("stopped %s in %s", p.Name, d.Round(time.Millisecond)))
				lmu.Unlock()
			}()
		}
		wg.Wait()
		sort.Strings(waveLines)
		lines = append(lines, waveLines...)
	}
	if n != nil {
		if err := n.Delete(); err != nil {
			lines = append(lines, "deleting namespaces: "+err.Error())
		} else {
			lines = append(lines, fmt.Sprintf("deleted namespaces %v", n.Namespaces()))
		}
	}
	liveMu.Lock()
	delete(live, r)
	liveMu.Unlock()
	return lines
}

// stopWaves groups processes for stopping: reverse start order, one wave per
// component kind (the part of the name after the last "/").
func stopWaves(procs []*Proc) [][]*Proc {
	var waves [][]*Proc
	index := map[string]int{}
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		kind := p.Name[strings.LastIndex(p.Name, "/")+1:]
		w, ok := index[kind]
		if !ok {
			w = len(waves)
			index[kind] = w
			waves = append(waves, nil)
		}
		waves[w] = append(waves[w], p)
	}
	return waves
}

// registerMachine records a booted machine so teardown stops it.
func (r *Run) registerMachine(m *Machine) {
	r.mu.Lock()
	r.machines = append(r.machines, m)
	r.mu.Unlock()
}

// atTeardown runs f at teardown, after the machines stopped and before the
// processes do (unmounting a machine's root, for instance).
func (r *Run) atTeardown(f func() error) {
	r.mu.Lock()
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

// stopMachines stops every machine at once, each bounded by
// MachineStopGrace, and says how long each took.
func stopMachines(machines []*Machine) []string {
	lines := make([]string, len(machines))
	var wg sync.WaitGroup
	for i, m := range machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := m.Stop(MachineStopGrace)
			lines[i] = fmt.Sprintf("stopped machine %s in %s", m.Name, d.Round(time.Millisecond))
		}()
	}
	wg.Wait()
	return lines
}
