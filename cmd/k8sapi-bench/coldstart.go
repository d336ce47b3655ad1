package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"time"
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

var buildTarget = regexp.MustCompile(`(?m)^build-(\w+):\s*;\s*\$\(call lambda_build,([\w-]+)\)`)

// functions reads the Makefile's build-<LogicalId> targets: logical id -> dir.
func functions() ([][2]string, error) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, m := range buildTarget.FindAllStringSubmatch(string(mk), -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no build-<LogicalId> targets in the Makefile")
	}
	return out, nil
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
		row, err := measureColdStart(o, st, rt, tmp, fn[0], fn[1])
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
func measureColdStart(o options, st stack, rt *fakeRuntimeAPI, tmp, id, dir string) (coldRow, error) {
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
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w -buildid=", "-o", host, "./functions/"+dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return row, fmt.Errorf("host build of %s: %w: %s", id, err, out)
	}
	env := functionEnv(st, id, rt.addr)
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

// functionEnv is what the local stack gives a function, against the fake
// Runtime API.
func functionEnv(st stack, id, runtimeAPI string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "TZ=:UTC", "LANG=C.UTF-8",
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME=" + id, "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "_HANDLER=bootstrap",
		"AWS_REGION=" + st.get("AWS_REGION"), "AWS_DEFAULT_REGION=" + st.get("AWS_REGION"),
		"AWS_ACCESS_KEY_ID=" + st.get("AWS_ACCESS_KEY_ID"), "AWS_SECRET_ACCESS_KEY=" + st.get("AWS_SECRET_ACCESS_KEY"),
		"AWS_ENDPOINT_URL=" + st.get("AWS_ENDPOINT_URL"),
		"DATABASE_URL=" + st.get("DATABASE_URL"), "KMS_KEY_ID=" + st.get("KMS_KEY_ID"),
		"COMPUTE_API_URL=" + st.get("SIM_URL") + "/compute", "DNS_API_URL=" + st.get("SIM_URL") + "/dns",
		"BOOTSTRAP_BASE_URL=" + st.get("API_URL"), "LOCAL_RUN=true",
	}
}

// coldStart execs bin and returns the time to its first GET .../next.
func coldStart(bin string, env []string, nextCh chan time.Time) (time.Duration, error) {
	select { // drop a stale signal
	case <-nextCh:
	default:
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Dir = filepath.Dir(bin)
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
		return 0, fmt.Errorf("exited before asking for an invocation: %v", err)
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("no runtime API request within 10s")
	}
}
