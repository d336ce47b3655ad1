package lambdaruntime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/proc"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// Runtime API paths and headers, as the Lambda service serves them to a
// custom runtime (docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	runtimeAPIVersion   = "/2018-06-01"
	hdrRequestID        = "Lambda-Runtime-Aws-Request-Id"
	hdrDeadline         = "Lambda-Runtime-Deadline-Ms"
	hdrFunctionARN      = "Lambda-Runtime-Invoked-Function-Arn"
	hdrTraceID          = "Lambda-Runtime-Trace-Id"
	maxResponsePayload  = 6 << 20          // Lambda's synchronous response limit
	startupGraceForInit = 10 * time.Second // Lambda's init phase limit
)

// Errors an invocation can end with, besides the function's own error.
var (
	ErrTimeout = errors.New("function timed out")
	ErrCrashed = errors.New("function process exited")
)

// FunctionError is an error the function reported through the Runtime API
// (its handler returned an error, or its init failed).
type FunctionError struct {
	Function     string
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Function, e.ErrorType, e.ErrorMessage)
}

// Invoker runs one invocation of a function: a Runner, or a Fleet of them.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

var _ Invoker = (*Runner)(nil)

// FunctionSpec is what it takes to run one function locally.
type FunctionSpec struct {
	Function samtemplate.Function
	Binary   string            // host build of the function's bootstrap
	Env      map[string]string // overrides on top of Function.Env
}

// Runner runs one function's bootstrap binary against its own local Runtime
// API, like one warm Lambda execution environment: one invocation in flight,
// the process started on demand and restarted after it dies or times out.
type Runner struct {
	spec FunctionSpec
	log  *slog.Logger
	out  io.Writer // the function's stdout/stderr

	srv  *http.Server
	addr string

	invokeMu sync.Mutex       // one invocation in flight, like one container
	next     chan *invocation // handed to the runtime's GET .../next

	mu        sync.Mutex // guards the fields below
	proc      *proc.Process
	pending   map[string]*invocation
	initError *FunctionError // last init error the runtime reported
}

type invocation struct {
	id      string
	payload []byte
	timeout time.Duration // the deadline runs from when the runtime takes it
	done    chan result   // buffered 1: the first answer wins
}

type result struct {
	payload []byte
	err     error
}

// NewRunner starts the function's Runtime API on a free loopback port. The
// process itself starts with Start or on the first Invoke.
func NewRunner(spec FunctionSpec, log *slog.Logger, out io.Writer) (*Runner, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API for %s: %w", spec.Function.LogicalID, err)
	}
	r := &Runner{
		spec: spec, log: log, out: out,
		addr:    l.Addr().String(),
		next:    make(chan *invocation),
		pending: map[string]*invocation{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimeAPIVersion+"/runtime/invocation/next", r.handleNext)
	mux.HandleFunc("POST "+runtimeAPIVersion+"/runtime/invocation/{id}/response", r.handleResponse)
	mux.HandleFunc("POST "+runtimeAPIVersion+"/runtime/invocation/{id}/error", r.handleError)
	mux.HandleFunc("POST "+runtimeAPIVersion+"/runtime/init/error", r.handleInitError)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// Addr is the AWS_LAMBDA_RUNTIME_API value of this function.
func (r *Runner) Addr() string { return r.addr }

// Start starts the function process if it is not running (a warm start for
// the first request).
func (r *Runner) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startLocked()
}

func (r *Runner) startLocked() error {
	if r.proc != nil && !r.proc.Exited() {
		return nil
	}
	r.initError = nil
	cmd := exec.Command(r.spec.Binary)
	cmd.Dir = filepath.Dir(r.spec.Binary) // LAMBDA_TASK_ROOT, as in Lambda
	cmd.Env = r.environ()
	p, err := proc.Start(r.spec.Function.LogicalID, cmd, r.out, syscall.SIGKILL)
	if err != nil {
		return err
	}
	r.proc = p
	r.log.Debug("runtime: started function process", "function", r.spec.Function.LogicalID, "pid", cmd.Process.Pid)
	return nil
}

// environ is the process environment of r's function (Environ).
func (r *Runner) environ() []string {
	return Environ(r.spec.Function, r.spec.Binary, r.addr, r.spec.Env)
}

// Environ is the process environment the local stack starts function f's
// binary with against the Runtime API at runtimeAPI: a clean one, as in
// Lambda (nothing leaks from the developer's shell), made of the reserved
// Lambda variables, the template's variables and the overrides.
func Environ(f samtemplate.Function, binary, runtimeAPI string, overrides map[string]string) []string {
	env := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin:/bin",
		"TZ":                              ":UTC",
		"LANG":                            "C.UTF-8",
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        f.LogicalID,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.MemorySize),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.LogicalID,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "local",
		"AWS_EXECUTION_ENV":               "AWS_Lambda_provided.al2023",
		"AWS_REGION":                      localaws.LocalRegion,
		"AWS_DEFAULT_REGION":              localaws.LocalRegion,
		"LAMBDA_TASK_ROOT":                filepath.Dir(binary),
		"_HANDLER":                        "bootstrap",
	}
	maps.Copy(env, f.Env)
	maps.Copy(env, overrides)
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Invoke runs one invocation with payload (an event) and returns the
// function's response payload. Errors: *FunctionError, ErrTimeout (the
// process is killed), ErrCrashed (the process died), or ctx's error while
// waiting for the process to take the invocation. Invocations are
// serialized.
func (r *Runner) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	r.invokeMu.Lock()
	defer r.invokeMu.Unlock()

	r.mu.Lock()
	if err := r.startLocked(); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	p := r.proc
	timeout := r.spec.Function.Timeout
	inv := &invocation{id: NewRequestID(), payload: payload, timeout: timeout, done: make(chan result, 1)}
	r.pending[inv.id] = inv
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, inv.id)
		r.mu.Unlock()
	}()

	// A cold process may spend up to the init limit before it asks for work;
	// the function's timeout runs from the moment it takes the invocation.
	timer := time.NewTimer(timeout + startupGraceForInit)
	defer timer.Stop()
	select {
	case r.next <- inv:
		timer.Reset(timeout)
	case <-p.Done():
		return nil, r.crashError(p)
	case <-timer.C:
		r.kill(p, "did not ask for an invocation in time")
		return nil, fmt.Errorf("%w: %s did not take the invocation within %s", ErrTimeout, r.spec.Function.LogicalID, timeout+startupGraceForInit)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Once the function has the invocation it runs to completion or to its
	// timeout, even if the caller has gone, as in Lambda: ctx no longer
	// counts, and the next invocation waits for this one.
	took := time.Now()
	select {
	case res := <-inv.done:
		r.report(inv.id, time.Since(took))
		return res.payload, res.err
	case <-p.Done():
		// The process may have answered just before it exited.
		select {
		case res := <-inv.done:
			return res.payload, res.err
		default:
		}
		return nil, r.crashError(p)
	case <-timer.C:
		r.kill(p, "timed out")
		return nil, fmt.Errorf("%w: %s after %s", ErrTimeout, r.spec.Function.LogicalID, timeout)
	}
}

// report writes the lines Lambda writes into a function's log around each
// invocation (START, END, REPORT): CloudWatch ingests them with the
// function's own lines, and the benchmark's cost table reads the billed
// duration from them (the handler's time rounded up to the millisecond).
func (r *Runner) report(id string, d time.Duration) {
	fmt.Fprintf(r.out, "START RequestId: %s Version: $LATEST\nEND RequestId: %s\n%s", id, id, ReportLine(id, d, r.spec.Function.MemorySize))
}

// ReportLine is Lambda's REPORT line of one invocation of d on a function
// of memoryMB.
func ReportLine(id string, d time.Duration, memoryMB int) string {
	return fmt.Sprintf("REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB\n",
		id, float64(d.Microseconds())/1000, BilledMillis(d), memoryMB)
}

// BilledMillis is d as Lambda bills it: rounded up to the millisecond.
func BilledMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func (r *Runner) crashError(p *proc.Process) error {
	r.mu.Lock()
	initErr := r.initError
	r.mu.Unlock()
	if initErr != nil {
		return fmt.Errorf("%w during init: %w", ErrCrashed, initErr)
	}
	return fmt.Errorf("%w: %s: %v", ErrCrashed, r.spec.Function.LogicalID, p.Err())
}

func (r *Runner) kill(p *proc.Process, why string) {
	r.log.Warn("runtime: killing function process", "function", r.spec.Function.LogicalID, "why", why)
	p.Stop(syscall.SIGKILL, time.Second)
}

// Kill SIGKILLs the function process now, as Lambda does to one whose
// invocation timed out: no deferred function, no undo, no answer. The
// invocation in flight ends with ErrCrashed; the next Invoke starts a fresh
// process. Fault tests use it to cut a function off at a chosen point.
func (r *Runner) Kill() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		r.kill(p, "killed on request")
	}
}

// Close stops the process and the Runtime API.
func (r *Runner) Close() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		// As Lambda does on shutdown: SIGTERM, a short grace, then SIGKILL.
		p.Stop(syscall.SIGTERM, 500*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

func (r *Runner) handleNext(w http.ResponseWriter, req *http.Request) {
	select {
	case inv := <-r.next:
		h := w.Header()
		h.Set(hdrRequestID, inv.id)
		h.Set(hdrDeadline, strconv.FormatInt(time.Now().Add(inv.timeout).UnixMilli(), 10))
		h.Set(hdrFunctionARN, fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", localaws.LocalRegion, localaws.AccountID, r.spec.Function.LogicalID))
		h.Set(hdrTraceID, "Root=1-"+strconv.FormatInt(time.Now().Unix(), 16)+"-"+NewRequestID()[:24]+";Sampled=0")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-req.Context().Done():
		// The runtime hung up (its process died or is being stopped).
	}
}

// pendingInvocation answers a bad id as Lambda does (400 InvalidRequestID).
func (r *Runner) pendingInvocation(w http.ResponseWriter, req *http.Request) (*invocation, bool) {
	r.mu.Lock()
	inv, ok := r.pending[req.PathValue("id")]
	r.mu.Unlock()
	if !ok {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation in flight with this id")
	}
	return inv, ok
}

func (r *Runner) handleResponse(w http.ResponseWriter, req *http.Request) {
	inv, ok := r.pendingInvocation(w, req)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxResponsePayload+1))
	if err != nil {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", "reading the response: "+err.Error())
		return
	}
	if len(body) > maxResponsePayload {
		deliver(inv, result{err: &FunctionError{Function: r.spec.Function.LogicalID, ErrorType: "Function.ResponseSizeTooLarge", ErrorMessage: "response payload exceeds 6 MB"}})
		writeRuntimeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "response payload exceeds 6 MB")
		return
	}
	deliver(inv, result{payload: body})
	writeAccepted(w)
}

func (r *Runner) handleError(w http.ResponseWriter, req *http.Request) {
	inv, ok := r.pendingInvocation(w, req)
	if !ok {
		return
	}
	deliver(inv, result{err: r.readFunctionError(req)})
	writeAccepted(w)
}

func (r *Runner) handleInitError(w http.ResponseWriter, req *http.Request) {
	fe := r.readFunctionError(req)
	r.mu.Lock()
	r.initError = fe
	r.mu.Unlock()
	r.log.Warn("runtime: function init failed", "function", r.spec.Function.LogicalID, "error", fe.ErrorMessage)
	writeAccepted(w)
}

func (r *Runner) readFunctionError(req *http.Request) *FunctionError {
	fe := &FunctionError{Function: r.spec.Function.LogicalID}
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err := json.Unmarshal(body, fe); err != nil || (fe.ErrorType == "" && fe.ErrorMessage == "") {
		fe.ErrorType = req.Header.Get("Lambda-Runtime-Function-Error-Type")
		fe.ErrorMessage = string(body)
	}
	return fe
}

func deliver(inv *invocation, res result) {
	select {
	case inv.done <- res:
	default: // already answered; the first answer wins, as in Lambda
	}
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func writeRuntimeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}

// NewRequestID returns a random UUID-shaped id, like Lambda's request ids.
func NewRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
