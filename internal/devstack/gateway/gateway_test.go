package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/devtest"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// startEcho serves devtest's template through a Gateway and a Runner
// running its echo function.
func startEcho(t *testing.T) *httptest.Server {
	t.Helper()
	tmpl, err := samtemplate.LoadTemplate(devtest.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := tmpl.Function("EchoFunction")
	log := devtest.Logger(t)
	r, err := lambdaruntime.NewRunner(lambdaruntime.FunctionSpec{Function: fn, Binary: devtest.Binary(t)}, log, devtest.Writer{T: t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	gw, err := NewGateway(tmpl, map[string]lambdaruntime.Invoker{"EchoFunction": r}, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv
}

type echoed struct {
	Method, Path, Query, Header, Env string
	Body                             []byte
	RequestID                        string `json:"request_id"`
	Started                          int64
}

func do(t *testing.T, method, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func echo(t *testing.T, base string) echoed {
	t.Helper()
	resp, b := do(t, "GET", base+"/echo/x", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("echo: %d %s", resp.StatusCode, b)
	}
	var e echoed
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("echo body %s: %v", b, err)
	}
	return e
}

func wantGatewayError(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if resp.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("got %d %s, want %d with code %q", resp.StatusCode, body, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	// The gateway's own answers carry its request id, as the functions' do.
	id := resp.Header.Get("X-Request-Id")
	if id == "" || !strings.Contains(string(body), `"request_id":"`+id+`"`) {
		t.Fatalf("request id %q in the header, body %s: want one id in both", id, body)
	}
}

// A request travels gateway → v2 event → Runtime API → real binary and back,
// with query, headers, body, cookies, the template's environment and a
// request id intact.
func TestGatewayRoundTrip(t *testing.T) {
	srv := startEcho(t)
	resp, b := do(t, "POST", srv.URL+"/echo/thing?y=1&y=2", []byte(`{"a":1}`), "X-Test", "yes")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var e echoed
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if e.Method != "POST" || e.Path != "/echo/thing" || e.Query != "y=1&y=2" || e.Header != "yes" || string(e.Body) != `{"a":1}` {
		t.Fatalf("echoed %+v", e)
	}
	if e.Env != "hello" {
		t.Fatalf("TEST_ENV %q: the template's !Ref to a parameter should resolve to its default", e.Env)
	}
	if e.RequestID == "" || resp.Header.Get("Apigw-Requestid") == "" {
		t.Fatalf("request ids: function saw %q, gateway sent %q", e.RequestID, resp.Header.Get("Apigw-Requestid"))
	}
	if c := resp.Header.Values("Set-Cookie"); strings.Join(c, ";") != "a=1;b=2" {
		t.Fatalf("cookies %q", c)
	}

	// Binary bodies travel base64 both ways and arrive as bytes.
	in := []byte{0x00, 0xff, 0x10}
	_, b = do(t, "PUT", srv.URL+"/echo/bin", in)
	if err := json.Unmarshal(b, &e); err != nil || !bytes.Equal(e.Body, in) {
		t.Fatalf("binary request body: %v %x", err, e.Body)
	}
	resp, b = do(t, "GET", srv.URL+"/binary", nil)
	if resp.StatusCode != 200 || !bytes.Equal(b, []byte{0xff, 0x00, 0xfe}) {
		t.Fatalf("binary response %d %x", resp.StatusCode, b)
	}
}

func TestGatewayUnroutable(t *testing.T) {
	srv := startEcho(t)
	resp, b := do(t, "GET", srv.URL+"/nope", nil)
	wantGatewayError(t, resp, b, 404, "not_found")
	resp, b = do(t, "DELETE", srv.URL+"/crash", nil) // the path exists, the method does not
	wantGatewayError(t, resp, b, 405, "method_not_allowed")
	if allow := resp.Header.Get("Allow"); allow != "GET" {
		t.Errorf("Allow %q, want GET", allow)
	}
}

// A crash answers 502 and the next request runs in a fresh process.
func TestGatewayCrashThenRecovery(t *testing.T) {
	srv := startEcho(t)
	before := echo(t, srv.URL)
	if again := echo(t, srv.URL); again.Started != before.Started {
		t.Fatal("the process was not kept warm between invocations")
	}
	resp, b := do(t, "GET", srv.URL+"/crash", nil)
	wantGatewayError(t, resp, b, 502, "bad_gateway")
	if after := echo(t, srv.URL); after.Started == before.Started {
		t.Fatal("expected a restarted process after the crash")
	}
}

// A function past its template Timeout (2 s here) answers 502, is killed, and
// the next request works.
func TestGatewayTimeoutThenRecovery(t *testing.T) {
	srv := startEcho(t)
	start := time.Now()
	resp, b := do(t, "GET", srv.URL+"/hang", nil)
	wantGatewayError(t, resp, b, 502, "bad_gateway")
	if took := time.Since(start); took < 2*time.Second || took > 10*time.Second {
		t.Fatalf("timeout took %s, want about 2 s", took)
	}
	if !strings.Contains(string(b), "timed out") {
		t.Fatalf("message %s", b)
	}
	echo(t, srv.URL)
}

func TestGatewayRefusesBodiesOverTenMB(t *testing.T) {
	srv := startEcho(t)
	resp, b := do(t, "POST", srv.URL+"/echo/big", bytes.Repeat([]byte("a"), MaxRequestBody+1))
	wantGatewayError(t, resp, b, 413, "body_too_large")
	echo(t, srv.URL)
}

func TestFromResponse(t *testing.T) {
	resp, err := fromResponse([]byte(`{"hello":"world"}`))
	if err != nil || resp.StatusCode != 200 || resp.Body != `{"hello":"world"}` {
		t.Fatalf("bare JSON: %+v %v", resp, err)
	}
	for _, bad := range []string{`not json`, `{"statusCode":99}`, `{"statusCode":"x"}`} {
		if _, err := fromResponse([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
