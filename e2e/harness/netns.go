package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// NamePrefix starts every network namespace the harness creates; the
// creating process's pid follows it, so stale ones can be told apart.
const NamePrefix = "exk8se2e-"

// ServicesAddr is where the node network reaches what a cloud VM reaches
// beyond its subnet: the artifact mirror, the image registry, and the
// local stack's API and IMDS (forwarded from the host's loopback). It sits
// on the switch, which every node routes through, and is the same in every
// run, so a cluster can be founded with its download bases before the
// network exists. 198.51.100.0/24 is TEST-NET-2: never a real host.
var ServicesAddr = netip.MustParseAddr("198.51.100.1")

// ResolverAddr is the subnet's DNS resolver, an address of its own on the
// switch as a cloud's VPC resolver is: not IMDS's, which the node's guard
// keeps every pod from (CoreDNS forwards the names it does not own here).
var ResolverAddr = netip.MustParseAddr("198.51.100.53")

// Network is one run's set of hosts: a switch namespace holding a bridge,
// and one namespace per node joined to the bridge by a veth pair. The
// bridge carries the subnet's gateway address, which is also where the
// harness's own probes come from (Dialer). Nothing touches the machine's
// real interfaces.
type Network struct {
	Switch  string // switch namespace name
	Gateway netip.Prefix
	Nodes   []NodeNet
	run     string
}

// NodeNet is one node's namespace and address.
type NodeNet struct {
	NS   string
	Addr netip.Prefix // the VM's address with the subnet's length
}

// IP returns the node's address as a string.
func (n NodeNet) IP() string { return n.Addr.Addr().String() }

// NewNetwork creates the namespaces for nodes with the given addresses
// (all in one subnet). The gateway is the subnet's first host address
// unless a node has it, then the last. On error whatever was made is
// removed.
func NewNetwork(run string, addrs []netip.Prefix) (_ *Network, err error) {
	if len(addrs) == 0 {
		return nil, errors.New("no node addresses")
	}
	subnet := addrs[0].Masked()
	used := map[netip.Addr]bool{}
	for _, a := range addrs {
		if a.Masked() != subnet {
			return nil, fmt.Errorf("node address %s is not in subnet %s", a, subnet)
		}
		used[a.Addr()] = true
	}
	gw := subnet.Addr().Next()
	if used[gw] {
		gw = lastHost(subnet)
	}
	n := &Network{Switch: run + "-sw", Gateway: netip.PrefixFrom(gw, subnet.Bits()), run: run}
	for i, a := range addrs {
		n.Nodes = append(n.Nodes, n.nodeNet(i, a))
	}
	defer func() {
		if err != nil {
			_ = n.Delete()
		}
	}()
	sw := n.Switch
	steps := [][]string{
		{"netns", "add", sw},
		{"-n", sw, "link", "set", "lo", "up"},
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "addr", "add", n.Gateway.String(), "dev", "br0"},
		// The platform's services as the nodes see them (see ServicesAddr).
		{"-n", sw, "addr", "add", ServicesAddr.String() + "/32", "dev", "br0"},
		{"-n", sw, "addr", "add", ResolverAddr.String() + "/32", "dev", "br0"},
		{"-n", sw, "link", "set", "br0", "up"},
	}
	for i, node := range n.Nodes {
		steps = append(steps, n.nodeSteps(i, node)...)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// nodeNet is the i-th node's namespace (counted from 0) with its address.
func (n *Network) nodeNet(i int, addr netip.Prefix) NodeNet {
	return NodeNet{NS: fmt.Sprintf("%s-n%d", n.run, i+1), Addr: addr}
}

// nodeSteps are the ip commands that make the i-th node's namespace and
// join it to the switch.
func (n *Network) nodeSteps(i int, node NodeNet) [][]string {
	sw, port := n.Switch, fmt.Sprintf("p%d", i+1)
	return [][]string{
		{"netns", "add", node.NS},
		{"-n", node.NS, "link", "set", "lo", "up"},
		// Created in the switch namespace, the node's end moved straight into its own.
		{"-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", node.NS},
		{"-n", sw, "link", "set", port, "master", "br0"},
		{"-n", sw, "link", "set", port, "up"},
		{"-n", node.NS, "addr", "add", node.Addr.String(), "dev", "eth0"},
		{"-n", node.NS, "link", "set", "eth0", "up"},
		// A VM has a default gateway; the switch forwards nowhere.
		{"-n", node.NS, "route", "add", "default", "via", n.Gateway.Addr().String()},
	}
}

// AddNode joins one more node to the switch, as a VM created after the
// network was made (a replacement, another cluster on the same subnet). On
// error whatever it made is removed.
func (n *Network) AddNode(addr netip.Prefix) (NodeNet, error) {
	if addr.Masked() != n.Gateway.Masked() {
		return NodeNet{}, fmt.Errorf("node address %s is not in subnet %s", addr, n.Gateway.Masked())
	}
	node := n.nodeNet(len(n.Nodes), addr)
	for _, s := range n.nodeSteps(len(n.Nodes), node) {
		if err := ip(s...); err != nil {
			if nsExists(node.NS) {
				_ = ip("netns", "del", node.NS)
			}
			return NodeNet{}, err
		}
	}
	n.Nodes = append(n.Nodes, node)
	return node, nil
}

// Unplug removes a node's namespace, as the platform frees a deleted VM's
// address (it may be given to the next VM): nothing may still run in it.
// Delete skips it later.
func (n *Network) Unplug(ns string) error {
	if !nsExists(ns) {
		return nil
	}
	return ip("netns", "del", ns)
}

func lastHost(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	bits := p.Bits()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= (1 << (32 - bits)) - 1
	v-- // broadcast
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Namespaces lists the run's namespaces, nodes first.
func (n *Network) Namespaces() []string {
	var out []string
	for _, node := range n.Nodes {
		out = append(out, node.NS)
	}
	return append(out, n.Switch)
}

// Delete removes the run's namespaces (their veths go with them). It
// kills nothing: stop the processes first.
func (n *Network) Delete() error {
	var errs []error
	for _, ns := range n.Namespaces() {
		if !nsExists(ns) {
			continue
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func nsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// ListNamespaces returns the names of existing network namespaces.
func ListNamespaces() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// CleanStale removes namespaces with NamePrefix left by runs whose process
// is gone (a crashed or killed run), first killing the processes still
// inside them (those are that run's components). It returns what it removed.
func CleanStale() ([]string, error) {
	names, err := ListNamespaces()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ns := range names {
		rest, ok := strings.CutPrefix(ns, NamePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || processAlive(pid) {
			continue
		}
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if p, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, ns)
	}
	return removed, errors.Join(errs...)
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Dialer returns a DialContext whose connections are made inside the named
// network namespace: each dial runs on an OS thread moved into that
// namespace (inNamespace), and the socket stays there for its life.
func Dialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ch := inNamespace(ns, func() (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		})
		select {
		case r := <-ch:
			return r.v, r.err
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.v != nil {
					_ = r.v.Close()
				}
			}()
			return nil, ctx.Err()
		}
	}
}

// ListenIn opens a TCP listener inside the named network namespace; the
// socket stays there.
func ListenIn(ns, addr string) (net.Listener, error) {
	r := <-inNamespace(ns, func() (net.Listener, error) { return net.Listen("tcp", addr) })
	return r.v, r.err
}

type nsResult[T any] struct {
	v   T
	err error
}

// inNamespace runs f on an OS thread moved into the named network
// namespace. The thread is never handed back to the Go scheduler (the
// goroutine exits locked, so the runtime discards it), so no other code
// runs in the namespace; sockets f opens stay there.
func inNamespace[T any](ns string, f func() (T, error)) <-chan nsResult[T] {
	ch := make(chan nsResult[T], 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- nsResult[T]{err: fmt.Errorf("opening netns %s: %w", ns, err)}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		_ = unix.Close(fd)
		if err != nil {
			ch <- nsResult[T]{err: fmt.Errorf("entering netns %s: %w", ns, err)}
			return
		}
		v, err := f()
		ch <- nsResult[T]{v, err}
	}()
	return ch
}
