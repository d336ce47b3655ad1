package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// fakeAPI is k8sapi's operator routes as a test scripts them: each
// "METHOD /path?query" answers with the next of its replies (the last one
// repeats), and every request is recorded.
type fakeAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies map[string][]reply
	calls   []call
	// sign, when set, answers POST /clusters/5/credentials from its body.
	sign func(body string) reply
}

type reply struct {
	status  int
	body    string
	headers map[string]string
}

type call struct {
	method, path, body string
	header             http.Header
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, replies: map[string][]reply{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) on(route string, replies ...reply) { f.replies[route] = replies }

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.RequestURI()
	f.mu.Lock()
	f.calls = append(f.calls, call{r.Method, r.URL.RequestURI(), string(body), r.Header.Clone()})
	rs, ok := f.replies[route]
	if ok && len(rs) > 1 {
		f.replies[route] = rs[1:]
	}
	f.mu.Unlock()
	if f.sign != nil && route == "POST /clusters/5/credentials" {
		rs, ok = []reply{f.sign(string(body))}, true
	}
	if !ok {
		w.Header().Set("X-Request-Id", "req-404")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no route `+route+`","request_id":"req-404"}}`)
		return
	}
	for k, v := range rs[0].headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rs[0].status)
	io.WriteString(w, rs[0].body)
}

func (f *fakeAPI) callsTo(route string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.method+" "+c.path == route {
			out = append(out, c)
		}
	}
	return out
}

// now is the tests' clock: ages are counted from it.
var now = time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI against f with env (the API settings come from it
// unless a test gives them), from a home directory of its own.
func runCLI(t *testing.T, f *fakeAPI, env map[string]string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	base := map[string]string{"K8SAPI_TOKEN": "op-token", "XDG_CONFIG_HOME": home + "/.config"}
	if f != nil {
		base["K8SAPI_URL"] = f.srv.URL
	}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		t.Setenv(k, v) // os.UserConfigDir reads XDG_CONFIG_HOME itself
	}
	cache := base["XDG_CACHE_HOME"] // as os.UserCacheDir reads it
	if cache == "" {
		cache = home + "/.cache"
	}
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, getenv: func(k string) string { return base[k] },
		now: func() time.Time { return now }, pollEvery: time.Millisecond, home: home, cacheDir: cache}
	code := a.main(args)
	return result{code, out.String(), errOut.String()}
}

func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// wantLines checks stdout has each of lines as a whole line.
func (r result) wantLines(t *testing.T, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Fatalf("no line %q in\n%s", want, r.stdout)
		}
	}
}

// wantOut compares stdout with want, lines trimmed of trailing spaces.
func (r result) wantOut(t *testing.T, want string) {
	t.Helper()
	if trimLines(r.stdout) != trimLines(want) {
		t.Fatalf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
}

func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func ok(body any) reply { return reply{status: 200, body: mustJSON(body)} }

func mustJSON(v any) string {
	if s, isString := v.(string); isString {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// cluster is a cluster view with nodes in the given phases (ordinal i is
// VM 10+i), founded an hour before now.
func cluster(id int64, status, state string, phases ...string) apitypes.ClusterView {
	c := apitypes.ClusterView{ID: id, Name: "exk8s-1-" + jsonInt(id), Status: status,
		ControlPlaneDNSName: "exk8s-1-" + jsonInt(id) + ".k8s.example", ServiceCIDR: "10.96.0.0/12", PodCIDR: "172.16.0.0/12",
		CNI: "cilium", KubernetesVersion: "v1.35.4", KeyAlgorithm: "ecdsa-p256", DNSConfigured: true,
		Bootstrap: apitypes.Bootstrap{State: state, Nodes: []apitypes.NodeBootstrap{}}, Nodes: []apitypes.NodeView{},
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour), CAsExpireAt: map[string]time.Time{"ca": time.Date(2036, 11, 24, 12, 0, 0, 0, time.UTC)}}
	for i, p := range phases {
		vm := int64(10 + i)
		name := "cp-" + jsonInt(int64(i)) + ".cluster-" + jsonInt(id) + ".internal"
		c.ControlPlaneVMIDs = append(c.ControlPlaneVMIDs, vm)
		c.Nodes = append(c.Nodes, apitypes.NodeView{VMID: vm, Ordinal: i, Name: name, IPv4: "10.0.0." + jsonInt(int64(10+i)), KubernetesVersion: "v1.35.4"})
		c.Bootstrap.Nodes = append(c.Bootstrap.Nodes, apitypes.NodeBootstrap{VMID: vm, NodeName: name, Phase: p, UpdatedAt: now.Add(-time.Minute)})
	}
	return c
}

func jsonInt(n int64) string { return mustJSON(n) }

func ptr[T any](v T) *T { return &v }
