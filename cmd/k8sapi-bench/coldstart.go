package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// coldRow is one function's init duration and binary size.
type coldRow struct {
	logicalID string
	inits     []time.Duration
	arm64Size int64
}

func (c coldRow) median() time.Duration {
	s := append([]time.Duration(nil), c.inits...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// functions are template.yaml's functions: the ones `make local` runs, each
// with the Makefile's build-<LogicalId> target.
func functions() ([]samtemplate.Function, error) {
	t, err := samtemplate.LoadTemplate("template.yaml")
	if err != nil {
		return nil, err
	}
	return t.Functions, nil
}

func runColdStarts(o options, st stack, r *report) error {
	fns, err := functions()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "k8sapi-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rt, err := startFakeRuntimeAPI()
	if err != nil {
		return err
	}
	defer rt.srv.Close()
	for _, fn := range fns {
		row, err := measureColdStart(o, st, rt, tmp, fn)
		if err != nil {
			return err
		}
		r.cold = append(r.cold, row)
	}
	r.coldArch = runtime.GOOS + "/" + runtime.GOARCH
	return nil
}

// fakeRuntimeAPI is just enough of the Lambda Runtime API to time an init:
// the first GET .../next ends the init phase and is sent on next.
type fakeRuntimeAPI struct {
	srv  *http.Server
	addr string
	next chan time.Time
}

func startFakeRuntimeAPI() (*fakeRuntimeAPI, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &fakeRuntimeAPI{addr: l.Addr().String(), next: make(chan time.Time, 1)}
	rt.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == "/2018-06-01/runtime/invocation/next" {
			select {
			case rt.next <- time.Now():
			default:
			}
			<-req.Context().Done() // no invocation: the process is killed next
			return
		}
		w.WriteHeader(http.StatusAccepted) // init errors and the like
	})}
	go func() { _ = rt.srv.Serve(l) }()
	return rt, nil
}

// measureColdStart builds one function twice, for its size (the Makefile's
// own sam build target: linux/arm64, stripped) and for this machine with
// the same flags, then times o.starts inits after one uncounted start.
func measureColdStart(o options, st stack, rt *fakeRuntimeAPI, tmp string, fn samtemplate.Function) (coldRow, error) {
	id := fn.LogicalID
	row := coldRow{logicalID: id}
	art := filepath.Join(tmp, "arm64", id)
	if out, err := exec.Command("make", "--no-print-directory", "build-"+id, "ARTIFACTS_DIR="+art).CombinedOutput(); err != nil {
		return row, fmt.Errorf("make build-%s: %w: %s", id, err, out)
	}
	fi, err := os.Stat(filepath.Join(art, "bootstrap"))
	if err != nil {
		return row, err
	}
	row.arm64Size = fi.Size()
	host := filepath.Join(tmp, "host", id, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", lambdaruntime.BuildTags, "-trimpath", "-ldflags=-s -w -buildid=", "-o", host, "./"+fn.CodeURI)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return row, fmt.Errorf("host build of %s: %w: %s", id, err, out)
	}
	env, err := functionEnv(st, fn, host, rt.addr)
	if err != nil {
		return row, err
	}
	for i := 0; i <= o.starts; i++ { // start 0 warms the page cache, not counted
		d, err := coldStart(host, env, rt.next)
		if err != nil {
			return row, fmt.Errorf("%s: %w", id, err)
		}
		if i > 0 {
			row.inits = append(row.inits, d)
		}
	}
	return row, nil
}

// functionEnv is the environment the local stack starts fn's binary with
// (devstack: its template variables and what the running stack gives it,
// such as its database user and the reconciler's service token), against
// the fake Runtime API.
func functionEnv(st stack, fn samtemplate.Function, binary, runtimeAPI string) ([]string, error) {
	env, err := devstack.FunctionEnv(fn, devstack.StackFromEnv(st.env))
	if err != nil {
		return nil, err
	}
	return lambdaruntime.Environ(fn, binary, runtimeAPI, env), nil
}

// coldStart execs bin and returns the time to its first GET .../next. A
// process that exits first is an error carrying its output's tail: why
// its cold start failed (wiring.Fatal logs it).
func coldStart(bin string, env []string, nextCh chan time.Time) (time.Duration, error) {
	select { // drop a stale signal
	case <-nextCh:
	default:
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Dir = filepath.Dir(bin)
	out := &tail{max: 2048}
	cmd.Stdout, cmd.Stderr = out, out
	exited := make(chan error, 1)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	select {
	case t := <-nextCh:
		return t.Sub(t0), nil
	case err := <-exited:
		exited <- err // for the deferred wait
		return 0, fmt.Errorf("exited before asking for an invocation: %v: %s", err, out)
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("no runtime API request within 10s")
	}
}

// tail keeps the last max bytes written to it (a process's output: it is
// written by exec's copying goroutines and read once the process exited,
// after Wait, which waits for them).
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(t.b)) }
