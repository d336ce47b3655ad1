package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/stacktest"
)

// stop kills the whole process group, grandchildren included.
func TestProcessStopKillsTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out := &stacktest.LockedBuffer{}
	p, err := Start("sh", cmd, out, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var child int
	if _, err := fmt.Sscan(out.String(), &child); err != nil || child == 0 {
		t.Fatalf("no child pid in %q", out.String())
	}
	p.Stop(syscall.SIGTERM, time.Second)
	time.Sleep(50 * time.Millisecond)
	if alive(child) {
		t.Fatalf("grandchild %d survived", child)
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
