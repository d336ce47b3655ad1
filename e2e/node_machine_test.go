package e2e

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/e2e/harness"
)

// The node proof boots nodes as systemd machines. make e2e (and so make
// test) runs it beside the process-level proof; make e2e-nodes runs it
// alone.

var (
	recipeMu    sync.Mutex
	recipeBuilt = map[string]error{}
)

// nodeImage returns the node image's root filesystem, building it first if
// its recipe changed. Where machines cannot boot, the test fails with one
// line saying why.
func nodeImage(t *testing.T) string {
	t.Helper()
	if err := harness.CheckMachineSupport(); err != nil {
		fatalf(t, "e2e: the node proof cannot run here: %v", err)
	}
	return filepath.Join(buildRecipe(t, "node", "node-image", "E2E_NODE_IMAGE_DIR"), "rootfs")
}

// testImageRoots returns the root filesystems the conformance suite's test
// images are made of, building them first if their recipe changed.
func testImageRoots(t *testing.T) harness.TestImageRoots {
	t.Helper()
	dir := buildRecipe(t, "test-images", "test-images", "E2E_TEST_IMAGES_DIR")
	return harness.TestImageRoots{Userland: filepath.Join(dir, "rootfs"), Busybox: filepath.Join(dir, "busybox")}
}

// buildRecipe runs build-node-image.sh for recipe into .work/<folder>
// once per test binary (the script itself returns at once when its stamp
// matches) and returns the folder.
func buildRecipe(t *testing.T, recipe, folder, dirVar string) string {
	t.Helper()
	dir := filepath.Join(e2eDir, ".work", folder)
	recipeMu.Lock()
	defer recipeMu.Unlock()
	err, done := recipeBuilt[recipe]
	if !done {
		start := time.Now()
		cmd := exec.Command("bash", filepath.Join(e2eDir, "build-node-image.sh"), recipe)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), dirVar+"="+dir)
		err = cmd.Run()
		recipeBuilt[recipe] = err
		t.Logf("%s image ready in %s", recipe, time.Since(start).Round(time.Second))
	}
	if err != nil {
		fatalf(t, "e2e: building the %s image: %v", recipe, err)
	}
	return dir
}

// TestNodeMachineBoots boots one node image as a systemd machine in a
// node namespace: systemd reaches running, the cloud-init stand-in runs
// the userdata once with the seed's environment, the machine has the
// node's hostname and address.
func TestNodeMachineBoots(t *testing.T) {
	image := nodeImage(t)
	r := newRun(t, "machine")
	addr := netip.MustParsePrefix("10.0.1.2/24")
	net, err := harness.NewNetwork(r.ID, []netip.Prefix{addr})
	if err != nil {
		fatal(t, err)
	}
	r.SetNetwork(net)
	userdata := "#!/bin/bash\nset -eu\necho \"userdata ran with $E2E_PROBE\" >/var/lib/userdata-ran\n"
	seed := harness.Seed{InstanceID: "vm-1", Hostname: "node-1", UserData: []byte(userdata),
		Env: map[string]string{"E2E_PROBE": "a value with spaces"}}
	start := time.Now()
	m, err := harness.BootMachine(r, "n1", image, net.Nodes[0].NS, filepath.Join(r.WorkDir, "n1"), seed)
	if err != nil {
		fatal(t, err)
	}
	r.Suspect("n1/console")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	state, err := m.WaitSystemRunning(ctx)
	if err != nil {
		fatal(t, err)
	}
	t.Logf("n1: systemd %s %s after boot", state, time.Since(start).Round(100*time.Millisecond))
	expect := map[string][]string{
		"userdata ran with a value with spaces": {"cat", "/var/lib/userdata-ran"},
		"active":                                {"systemctl", "is-active", "cloud-init-standin.service", "sandbox-cgroups.service", "sandbox-kernel-tunables.service"},
		"1\n10\n1":                              {"cat", "/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/panic", "/proc/sys/kernel/panic_on_oops"},
		"writable":                              {"sh", "-c", "mkdir /sys/fs/cgroup/memory/e2e-probe && rmdir /sys/fs/cgroup/memory/e2e-probe && echo writable"},
		"node-1":                                {"hostname"},
		addr.String():                           {"ip", "-4", "-o", "addr", "show", "dev", "eth0"},
	}
	for want, argv := range expect {
		out, err := m.Exec(ctx, argv...)
		if err != nil || !strings.Contains(string(out), want) {
			errorf(t, "%s: want %q, got %q (%v)", strings.Join(argv, " "), want, out, err)
		}
	}
	checkRebootKeepsInstance(ctx, t, m)
}

// checkRebootKeepsInstance reboots the machine: it comes back (a new PID
// 1, systemd running) and the userdata does not run again.
func checkRebootKeepsInstance(ctx context.Context, t *testing.T, m *harness.Machine) {
	before, err := m.Leader()
	if err != nil {
		fatal(t, err)
	}
	_, _ = m.Exec(ctx, "systemctl", "reboot")
	for {
		if leader, err := m.Leader(); err == nil && leader != before {
			break
		}
		if ctx.Err() != nil {
			fatalf(t, "%s did not come back from a reboot: %v", m.Name, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := m.WaitSystemRunning(ctx); err != nil {
		fatal(t, err)
	}
	out, err := m.Exec(ctx, "journalctl", "-b", "-u", "cloud-init-standin", "-o", "cat")
	if err != nil || !strings.Contains(string(out), "already ran") {
		errorf(t, "after the reboot the userdata should not run again: %q (%v)", out, err)
	}
}
