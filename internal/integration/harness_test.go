package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/founding"
	"github.com/excloud/k8sapi/internal/metrics"
	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/store"
	"github.com/excloud/k8sapi/internal/testenv"
)

const baseDomain = "k8s.test.excloud"

// stack is k8sapi in-process: every function's routes on one server, over a
// fresh database, a fresh KMS key and a simulator.
type stack struct {
	t        *testing.T
	pool     *pgxpool.Pool
	sim      *simulator.Simulator
	simURL   string
	api      *httptest.Server
	envelope *envelope.Envelope
	founder  *founding.Service
	server   *api.Server             // every function's handlers: server.Handler(logical id)
	logs     *stacktest.LockedBuffer // what the handlers and use cases logged, at debug level
	tokens   map[int64]string        // a live principal token per org
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	// The functions' tracer: a test that turns DebugCounters on reads each
	// request's round trips from its headers.
	pool, err := store.Open(ctx, dsn, metrics.QueryTracer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The simulator stands for other services with their own connections:
	// sharing k8sapi's small pool would let founding transactions starve
	// the compute API they are waiting on.
	simPool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(simPool.Close)
	sim, err := simulator.New(simulator.Config{DB: simPool})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)

	kmsClient, keyID := testenv.KMSKey(t)
	env := envelope.New(kmsClient, keyID, nil)
	s := &stack{t: t, pool: pool, sim: sim, simURL: simSrv.URL, envelope: env, tokens: map[int64]string{}, logs: &stacktest.LockedBuffer{}}
	in, err := stacktest.New(stacktest.Config{
		Pool: pool, Envelope: env, SimURL: simSrv.URL, SimClient: simSrv.Client(),
		BaseDomain: baseDomain, BootstrapBaseURL: "https://k8sapi.test.excloud",
		Log: slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.founder, s.server = in.Founder, in.Server
	s.api = httptest.NewServer(in.Handler)
	t.Cleanup(s.api.Close)
	return s
}

// token returns a live principal token of org.
func (s *stack) token(org int64) string {
	if tok, ok := s.tokens[org]; ok {
		return tok
	}
	tok, err := simulator.IssuePrincipalToken(context.Background(), s.pool, org, auth.PrincipalScope, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	s.tokens[org] = tok
	return tok
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// errorCode returns the JSON error's code, failing if the body is not the
// error shape.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	r.json(t, &e)
	if e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error: %s", r.Body)
	}
	return e.Error.Code
}

func do(t *testing.T, method, url string, body string, headers map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if bytes.Contains(b, []byte("PRIVATE KEY")) && !strings.Contains(url, "/bootstrap/") && method != http.MethodPost {
		t.Fatalf("%s %s leaked key material", method, url)
	}
	// Every response of a documented route holds to the OpenAPI document.
	if _, err := apidocstest.Check(method, url, resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("contract: %v", err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (s *stack) bearer(org int64) map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.token(org)}
}

const threeNodes = `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1,"control_plane_count":3}`

// found founds a cluster for org and returns the 201 body.
func (s *stack) found(org int64, body string) founding.Result {
	s.t.Helper()
	r := do(s.t, http.MethodPost, s.api.URL+"/clusters", body, s.bearer(org))
	if r.Status != http.StatusCreated {
		s.t.Fatalf("POST /clusters = %d %s", r.Status, r.Body)
	}
	var res founding.Result
	r.json(s.t, &res)
	return res
}

// vmCredentials walks the simulator's IMDS like the userdata shim: a
// session token, then an access token.
func (s *stack) vmCredentials(vmID int64) (imdsToken, accessToken string) {
	s.t.Helper()
	base := s.simURL + "/imds/" + itoa(vmID)
	r := do(s.t, http.MethodGet, base+"/token", "", nil)
	if r.Status != http.StatusOK {
		s.t.Fatalf("IMDS token for vm %d: %d %s", vmID, r.Status, r.Body)
	}
	imdsToken = strings.TrimSpace(string(r.Body))
	r = do(s.t, http.MethodGet, base+"/latest/identity/access-token", "", map[string]string{"X-exc-imds-token": imdsToken})
	var at struct {
		AccessToken string `json:"access_token"`
	}
	r.json(s.t, &at)
	return imdsToken, at.AccessToken
}

func (s *stack) fetchBundle(vmID int64, imdsToken, accessToken string) response {
	s.t.Helper()
	return do(s.t, http.MethodGet, s.api.URL+"/bootstrap/control-plane/"+itoa(vmID), "", map[string]string{
		"X-exc-imds-token": imdsToken, "Authorization": "Bearer " + accessToken,
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
