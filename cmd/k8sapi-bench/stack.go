package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/excloud/k8sapi/internal/devstack"
)

// localAPI is make local's gateway. Only a stack there is reused: other
// stacks (the e2e proof's, on a random port) come and go on their own.
const localAPI = "http://127.0.0.1:3000"

// stack is the running local stack's settings (.local/stack.env).
type stack struct {
	env  map[string]string
	note string
}

func (s stack) get(k string) string { return s.env[k] }

func readStackEnv() (map[string]string, error) {
	return devstack.ReadStackEnv(filepath.Join(".local", devstack.StackEnvFile))
}

func healthy(apiURL string) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(apiURL + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ensureStack uses a running `make local`, or starts one in the background
// (its own process group) and returns a stop function for it.
func ensureStack() (stack, func(), error) {
	if env, err := readStackEnv(); err == nil && env["API_URL"] == localAPI && healthy(localAPI) {
		log.Printf("using the running local stack at %s", env["API_URL"])
		return stack{env: env, note: "an already running `make local` (start it with VM_CALL_BUDGET_FACTOR=1000, or the load meets the per-VM budgets: 429)"}, func() {}, nil
	}
	if err := os.MkdirAll(benchDir, 0o755); err != nil {
		return stack{}, nil, err
	}
	logPath := filepath.Join(benchDir, "local.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return stack{}, nil, err
	}
	log.Printf("starting make local (log: %s)", logPath)
	cmd := exec.Command("make", "--no-print-directory", "local")
	// The load drives a few VMs far past a VM's budget of calls: raise it
	// (every call is still counted, so its cost is in the figures).
	cmd.Env = append(os.Environ(), "VM_CALL_BUDGET_FACTOR=1000")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return stack{}, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		log.Printf("stopping the local stack")
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // our own process group only
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logFile.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		select {
		case err := <-exited:
			logFile.Close()
			return stack{}, nil, fmt.Errorf("make local exited (%v); see %s", err, logPath)
		case <-ctx.Done():
			stop()
			return stack{}, nil, fmt.Errorf("make local not ready in 5 minutes; see %s", logPath)
		case <-time.After(250 * time.Millisecond):
		}
		if env, err := readStackEnv(); err == nil && env["API_URL"] == localAPI && healthy(localAPI) {
			return stack{env: env, note: "`make local` started by the benchmark"}, stop, nil
		}
	}
}
