package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MachineStopGrace is how long a machine gets to power off after the
// harness asks; then its PID 1 is killed, which ends every process in the
// machine's PID namespace (containerd shims and pods included). A machine
// shutting down with pods running can hang, so the stop is always bounded.
const MachineStopGrace = 20 * time.Second

// PowerOffGrace is how long a node's machine gets to power off once
// k8sapi deleted its VM (a worker's scale-down or its pool's deletion, a
// control-plane node's replacement or shrink), as the platform must give
// a deleted VM: its drain (exk8s-drain.service) runs at power-off and
// may take as long as its bound (docs/NODE-POOLS.md, "Scale down and
// delete"). A machine stopped with MachineStopGrace instead has its drain
// cut short.
const PowerOffGrace = 3 * time.Minute

// SystemCallFilter is what containerd, runc and the kubelet need beyond
// systemd-nspawn's default allow list (measured on these machines).
const SystemCallFilter = "@system-service @mount @privileged add_key keyctl bpf"

// Seed is what a cloud gives a VM at boot: the cloud-init NoCloud seed the
// node image's cloud-init stand-in reads.
type Seed struct {
	InstanceID string
	Hostname   string
	UserData   []byte
	// Env is exported to the userdata (the proof names the IMDS endpoint as
	// seen from the node network with it).
	Env map[string]string
}

// Machine is one node booted as a systemd machine: systemd-nspawn running
// real systemd as PID 1 on an overlay of the node image, inside the node's
// network namespace.
type Machine struct {
	Name   string
	NS     string
	Root   string // the overlay's merged view: the machine's /
	dir    string // upper and work folders of the overlay
	logDir string

	mu       sync.Mutex
	proc     *Proc         // the running systemd-nspawn (a new one after each reboot)
	stopping bool          // Stop was called: an exit is not a reboot
	ended    chan struct{} // closed when the machine is down for good
}

// BootMachine mounts an overlay of image (the image stays untouched, each
// machine writes to its own upper folder), writes the seed and boots it
// with systemd-nspawn inside namespace ns. dir holds the overlay's folders;
// the console log goes to logDir/<name>_console.log.
func BootMachine(r *Run, name, image, ns, dir string, seed Seed) (*Machine, error) {
	m := &Machine{Name: name, NS: ns, Root: filepath.Join(dir, "root"), dir: dir, logDir: r.LogDir}
	if err := nspawnRuntimeOnTmpfs(); err != nil {
		return nil, err
	}
	if err := m.mountOverlay(image); err != nil {
		return nil, err
	}
	r.atTeardown(m.unmount)
	if err := writeSeed(m.Root, seed); err != nil {
		return nil, fmt.Errorf("writing the seed of %s: %w", name, err)
	}
	console := filepath.Join(r.LogDir, fileName(name+"/console")+".log")
	start := func() (*Proc, error) {
		return StartPiped(name+"/console", Host{}, dir, console, machineEnv(), m.nspawnArgv())
	}
	p, err := start()
	if err != nil {
		return nil, err
	}
	m.proc, m.ended = p, make(chan struct{})
	go m.supervise(start)
	r.registerMachine(m)
	return m, nil
}

// nspawnRebootStatus is systemd-nspawn's exit status when the machine
// asked to reboot; its service unit restarts it on that status, and so
// does the harness, as a hypervisor restarts a rebooting VM.
const nspawnRebootStatus = 133

// supervise boots the machine again each time it reboots, until it stops
// for another reason.
func (m *Machine) supervise(start func() (*Proc, error)) {
	defer close(m.ended)
	for {
		p := m.current()
		<-p.done
		m.mu.Lock()
		reboot := !m.stopping && p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == nspawnRebootStatus
		m.mu.Unlock()
		if !reboot {
			return
		}
		next, err := start()
		if err != nil {
			return
		}
		m.mu.Lock()
		m.proc = next
		m.mu.Unlock()
	}
}

// current is the running systemd-nspawn process.
func (m *Machine) current() *Proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// nspawnRuntime is where systemd-nspawn keeps each machine's runtime
// state. On a reboot nspawn empties it, and refuses to unless it is on a
// temporary file system; on these hosts /run is part of the disk, so the
// harness mounts a tmpfs there (once; later runs share it).
const nspawnRuntime = "/run/systemd/nspawn"

func nspawnRuntimeOnTmpfs() error {
	if err := os.MkdirAll(nspawnRuntime, 0o755); err != nil {
		return err
	}
	var here, parent syscall.Statfs_t
	if err := syscall.Statfs(nspawnRuntime, &here); err != nil {
		return err
	}
	if err := syscall.Statfs(filepath.Dir(nspawnRuntime), &parent); err != nil {
		return err
	}
	const tmpfsMagic = 0x01021994
	if here.Type == tmpfsMagic {
		return nil
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", nspawnRuntime).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w: %s", nspawnRuntime, err, bytes.TrimSpace(out))
	}
	return nil
}

func (m *Machine) mountOverlay(image string) error {
	upper, work := filepath.Join(m.dir, "upper"), filepath.Join(m.dir, "work")
	for _, d := range []string{upper, work, m.Root, m.containerdDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", image, upper, work)
	if out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o", opts, m.Root).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting the root of %s: %w: %s", m.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

func (m *Machine) unmount() error {
	if out, err := exec.Command("umount", "-l", m.Root).CombinedOutput(); err != nil {
		return fmt.Errorf("unmounting the root of %s: %w: %s", m.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

func writeSeed(root string, s Seed) error {
	dir := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	meta := fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", s.InstanceID, s.Hostname)
	var env strings.Builder
	for k, v := range s.Env {
		fmt.Fprintf(&env, "%s=%s\n", k, strconv.Quote(v))
	}
	files := map[string][]byte{"meta-data": []byte(meta), "user-data": s.UserData, "environment": []byte(env.String())}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// machineEnv is the harness's environment for systemd-nspawn.
func machineEnv() []string {
	return append(os.Environ(),
		// The host's cgroups are v1 (hybrid, an empty cgroup2): the machine
		// gets the v1 controllers, which bookworm's systemd boots on.
		"SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0",
		// The node's own network settings (ip_forward, the bridge's
		// netfilter hooks) live in /proc/sys/net, which nspawn mounts
		// read-only unless told the network is the machine's own.
		"SYSTEMD_NSPAWN_API_VFS_WRITABLE=network",
	)
}

// containerdDir is the machine's /var/lib/containerd, on the host's disk:
// containerd's overlayfs snapshotter cannot stack its layers on the
// machine's overlay root (a cloud VM's disk is ext4 or xfs).
func (m *Machine) containerdDir() string { return filepath.Join(m.dir, "containerd") }

func (m *Machine) nspawnArgv() []string {
	return []string{"systemd-nspawn",
		"--quiet",
		"--directory=" + m.Root,
		"--machine=" + m.Name,
		"--boot",
		// There is no host systemd (nor machined) to register with.
		"--register=no", "--keep-unit",
		"--network-namespace-path=/run/netns/" + m.NS,
		// The kubelet exits without a kernel log device.
		"--bind=/dev/kmsg",
		"--bind=" + m.containerdDir() + ":/var/lib/containerd",
		"--system-call-filter=" + SystemCallFilter,
		"--capability=all",
		// The node's resolv.conf is its own business (systemd-resolved).
		"--resolv-conf=off",
		"--timezone=off",
		"--link-journal=no",
		// The machine's console is nspawn's own output, written straight
		// to the console log: a pty forwarded by nspawn stalls here (it
		// forwards to no output it cannot poll), and a full pty blocks
		// whatever writes to the console, PID 1 included.
		"--console=pipe",
	}
}

// Leader returns the host pid of the machine's PID 1 (systemd), the
// child of systemd-nspawn.
func (m *Machine) Leader() (int, error) {
	p := m.current()
	if done, err := p.Exited(); done {
		return 0, fmt.Errorf("machine %s is not running (systemd-nspawn exited: %v)", m.Name, err)
	}
	pid := p.Pid()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, fmt.Errorf("finding the PID 1 of %s: %w", m.Name, err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("machine %s has no PID 1 yet", m.Name)
	}
	return strconv.Atoi(f[0])
}

// Exec runs argv inside the machine (all of its namespaces) and returns
// its combined output.
func (m *Machine) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	leader, err := m.Leader()
	if err != nil {
		return nil, err
	}
	full := append([]string{"nsenter", "--target", strconv.Itoa(leader),
		"--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup", "--root", "--wd", "--"}, argv...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s on %s: %w: %s", strings.Join(argv, " "), m.Name, err, lastLines(string(out), 5))
	}
	return out, nil
}

// SystemState returns `systemctl is-system-running` inside the machine:
// initializing, starting, running, degraded, ...
func (m *Machine) SystemState(ctx context.Context) (string, error) {
	out, err := m.Exec(ctx, "systemctl", "is-system-running")
	state := strings.TrimSpace(string(out))
	// is-system-running exits non-zero for every state but "running".
	if state != "" && !strings.Contains(state, "\n") && !strings.Contains(state, "Failed") {
		return state, nil
	}
	return "", err
}

// Exited reports whether the machine is down for good (not rebooting),
// and how its last systemd-nspawn ended.
func (m *Machine) Exited() (bool, error) {
	select {
	case <-m.ended:
		return m.current().Exited()
	default:
		return false, nil
	}
}

// stopped says whether Stop was called: its exit is expected.
func (m *Machine) stopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopping
}

// Stop asks the machine to power off (SIGTERM to systemd-nspawn, which
// tells the machine's systemd to halt) and, after grace, kills its PID 1.
// It returns how long it took.
func (m *Machine) Stop(grace time.Duration) time.Duration {
	start := time.Now()
	p, running := m.beginStop()
	if !running {
		return 0
	}
	leader, leaderErr := m.Leader()
	_ = syscall.Kill(p.Pid(), syscall.SIGTERM)
	if !m.waitExit(grace) {
		m.kill(p, leader, leaderErr)
	}
	return time.Since(start)
}

// Crash kills the machine's PID 1 at once, as a VM whose host loses power:
// nothing in it runs its stop (a worker's drain does not run, etcd is not
// told), and k8sapi hears nothing but the silence of its health reports.
func (m *Machine) Crash() time.Duration {
	start := time.Now()
	if p, running := m.beginStop(); running {
		leader, err := m.Leader()
		m.kill(p, leader, err)
	}
	return time.Since(start)
}

// beginStop marks the machine's exit expected and answers its process,
// running false when it has exited already.
func (m *Machine) beginStop() (*Proc, bool) {
	m.mu.Lock()
	m.stopping = true
	p := m.proc
	m.mu.Unlock()
	done, _ := p.Exited()
	return p, !done
}

// kill ends the machine's PID 1 (leader, when known), and systemd-nspawn
// itself if the machine has not exited 10 s later.
func (m *Machine) kill(p *Proc, leader int, leaderErr error) {
	if leaderErr == nil {
		_ = syscall.Kill(leader, syscall.SIGKILL)
	}
	if !m.waitExit(10 * time.Second) {
		p.Stop(0)
	}
}

func (m *Machine) waitExit(d time.Duration) bool {
	select {
	case <-m.ended:
		return true
	case <-time.After(d):
		return false
	}
}

// WaitSystemRunning polls the machine's system state until it is running
// or degraded (then it lists the failed units), the machine exits, or ctx
// ends.
func (m *Machine) WaitSystemRunning(ctx context.Context) (string, error) {
	var last string
	var lastErr error
	for {
		if done, err := m.Exited(); done {
			return "", fmt.Errorf("machine %s exited while booting (%v); console: %s", m.Name, err, m.current().Tail(20))
		}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		state, err := m.SystemState(c)
		cancel()
		switch state {
		case "running":
			return state, nil
		case "degraded":
			failed, _ := m.Exec(ctx, "systemctl", "--failed", "--no-legend", "--plain")
			return state, fmt.Errorf("machine %s is degraded; failed units: %s", m.Name, strings.TrimSpace(string(failed)))
		}
		last, lastErr = state, err
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("machine %s not running (last state %q, %v): %w", m.Name, last, lastErr, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

var errNoNspawn = errors.New("systemd-nspawn not found (apt-get install systemd-container)")

// CheckMachineSupport says in one line why machines cannot boot here, or
// returns nil.
func CheckMachineSupport() error {
	if os.Geteuid() != 0 {
		return errors.New("booting nodes as machines needs root (network namespaces, overlay mounts, systemd-nspawn)")
	}
	for _, tool := range []string{"systemd-nspawn", "nsenter", "mount", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			if tool == "systemd-nspawn" {
				return errNoNspawn
			}
			return fmt.Errorf("%s not found", tool)
		}
	}
	return nil
}

// conntrackMax is the host's connection-tracking table size, a kernel-wide
// setting a machine can read but not write.
const conntrackMax = "/proc/sys/net/netfilter/nf_conntrack_max"

// MatchConntrackToKubeProxy sets the host's nf_conntrack_max to what
// kube-proxy sets on a node of its own (32768 per core, at least 131072):
// kube-proxy writes it whenever it differs, and a write from a machine is
// refused, which stops kube-proxy. It returns the value set, if any.
func MatchConntrackToKubeProxy() (string, error) {
	want := strconv.Itoa(max(32768*runtime.NumCPU(), 131072))
	have, err := os.ReadFile(conntrackMax)
	if err != nil || strings.TrimSpace(string(have)) == want {
		return "", err
	}
	return want, os.WriteFile(conntrackMax, []byte(want), 0o644)
}

// inotifyFloors are the inotify limits a host of several machines needs:
// every machine runs as the host's root (no user namespaces), so all of
// them and every container in them share one per-user budget, which on a
// VM is the node's own. 128 instances (the kernel's default) run out once
// three nodes run the conformance suite's pods; kind asks for the same.
var inotifyFloors = []struct {
	path string
	min  int
}{
	{"/proc/sys/fs/inotify/max_user_instances", 8192},
	{"/proc/sys/fs/inotify/max_user_watches", 524288},
}

// RaiseInotifyLimits raises the host's inotify limits to inotifyFloors
// where they are lower (never lowers one) and says what it set.
func RaiseInotifyLimits() ([]string, error) {
	var set []string
	for _, f := range inotifyFloors {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			return set, err
		}
		if have, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && have >= f.min {
			continue
		}
		if err := os.WriteFile(f.path, []byte(strconv.Itoa(f.min)), 0o644); err != nil {
			return set, err
		}
		set = append(set, fmt.Sprintf("%s=%d", filepath.Base(f.path), f.min))
	}
	return set, nil
}

// Upper is the overlay's upper folder: every file the machine wrote
// itself (born on the node, not in the image).
func (m *Machine) Upper() string { return filepath.Join(m.dir, "upper") }
