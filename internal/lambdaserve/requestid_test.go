package lambdaserve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/apidocs"
	"github.com/excloud/k8sapi/internal/apidocs/apidocstest"
	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/cluster"
	"github.com/excloud/k8sapi/internal/clusterspec"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

const secret = "s3cr3t-principal-token"

// refuse answers every proof with 401, except a principal that panics the
// founder (to prove the 500 path).
type refuse struct{}

func (refuse) Operator(_ context.Context, authorization string) (auth.Principal, error) {
	if authorization == "Bearer panic" {
		return auth.Principal{OrgID: 1}, nil
	}
	return auth.Principal{}, apperr.Unauthenticated.Detail("the bearer token is not valid")
}

func (refuse) ProveVM(context.Context, int64, string, string, *vmlimit.Count) (auth.BootstrapVM, *vmlimit.Window, error) {
	return auth.BootstrapVM{}, nil, apperr.Unauthenticated.Detail("the IMDS token is not valid")
}

type panicking struct{}

func (panicking) Found(context.Context, auth.Principal, string, clusterspec.Request, string) (*cluster.Result, error) {
	panic("boom")
}
func (panicking) List(context.Context, auth.Principal, cluster.ListQuery) (apitypes.ClusterList, error) {
	panic("boom")
}
func (panicking) Get(context.Context, auth.Principal, int64) (apitypes.ClusterView, error) {
	panic("boom")
}
func (panicking) Delete(context.Context, auth.Principal, string, int64) (apitypes.ClusterView, error) {
	panic("boom")
}
func (panicking) KeepSpec(context.Context, auth.Principal, int64, apitypes.ClusterFile) (apitypes.ClusterView, error) {
	panic("boom")
}
func (panicking) SetRemediation(context.Context, auth.Principal, int64, clusterspec.RemediationChange) (apitypes.ClusterView, string, error) {
	panic("boom")
}
func (panicking) Catalog(context.Context, auth.Principal, string) (apitypes.Catalog, error) {
	panic("boom")
}
func (panicking) Bundle(context.Context, auth.BootstrapVM) (*bundle.Bundle, error) { panic("boom") }

func gatewayEvent(method, path, query, body, requestID string, headers map[string]string, routeKey string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"host": "127.0.0.1:3000", "content-type": "application/json"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, RawQueryString: query, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: requestID, RouteKey: routeKey, Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "127.0.0.1"},
		},
	}
}

func bodyOf(t *testing.T, r events.APIGatewayV2HTTPResponse) []byte {
	t.Helper()
	if !r.IsBase64Encoded {
		return []byte(r.Body)
	}
	b, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func headerOf(r events.APIGatewayV2HTTPResponse) http.Header {
	h := http.Header{}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	for k, vs := range r.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// Through the Lambda adapter, as API Gateway invokes a function: every
// response of every function carries requestContext.requestId as
// X-Request-Id, every error body carries it as request_id, every response
// matches the OpenAPI document, and every request logs one JSON line with
// that id, the route, the status and the latency, and no secret.
func TestRequestIDThroughTheLambdaAdapter(t *testing.T) {
	var logs bytes.Buffer
	srv := &api.Server{
		Auth: refuse{}, Limits: &vmlimit.Limiter{}, Founder: panicking{}, Clusters: panicking{}, Bundles: panicking{}, Docs: apidocs.Document{},
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	bearer := map[string]string{"Authorization": "Bearer " + secret}
	validCreate := `{"control_plane_image_id":1,"control_plane_instance_type":"c1.large","subnet_id":1}`
	cases := []struct {
		function, method, path, query, body string
		headers                             map[string]string
		status                              int
		code                                string
	}{
		{"HealthFunction", "GET", "/health", "", "", nil, 200, ""},
		{"HealthFunction", "GET", "/openapi.json", "", "", nil, 200, ""},
		{"HealthFunction", "GET", "/docs", "", "", nil, 200, ""},
		{"HealthFunction", "GET", "/nope", "", "", nil, 404, "not_found"},
		{"CreateClusterFunction", "POST", "/clusters", "", validCreate, bearer, 401, "unauthenticated"},
		{"CreateClusterFunction", "POST", "/clusters", "", `{"x":1}`, map[string]string{"Authorization": "Bearer panic"}, 400, "invalid_field"},
		{"CreateClusterFunction", "POST", "/clusters", "", `{`, map[string]string{"Authorization": "Bearer panic"}, 400, "invalid_json"},
		{"CreateClusterFunction", "POST", "/clusters", "", strings.Repeat(" ", api.MaxBodyBytes+1), map[string]string{"Authorization": "Bearer panic"}, 413, "body_too_large"},
		{"CreateClusterFunction", "POST", "/clusters", "", validCreate, map[string]string{"Authorization": "Bearer panic"}, 500, "internal"},
		{"ClustersFunction", "GET", "/clusters", "", "", bearer, 401, "unauthenticated"},
		{"ClustersFunction", "GET", "/clusters", "", "", map[string]string{"Authorization": "Bearer panic"}, 500, "internal"},
		{"ClustersFunction", "GET", "/clusters/7", "", "", bearer, 401, "unauthenticated"},
		{"ClustersFunction", "GET", "/clusters/x7", "", "", map[string]string{"Authorization": "Bearer panic"}, 400, "invalid_path"},
		{"ClustersFunction", "DELETE", "/clusters/7", "", "", bearer, 401, "unauthenticated"},
		{"GetBundleFunction", "GET", "/bootstrap/control-plane/7", "", "", map[string]string{"X-exc-imds-token": secret}, 401, "unauthenticated"},
		{"GetBundleFunction", "GET", "/bootstrap/control-plane/0", "", "", nil, 400, "invalid_path"},
	}
	for i, c := range cases {
		id := "gw-request-" + string(rune('a'+i))
		routeKey := c.method + " " + c.path
		ev := gatewayEvent(c.method, c.path, c.query, c.body, id, c.headers, routeKey)
		logs.Reset()
		resp, err := Handler(srv.Handler(api.FunctionNamed(c.function)))(context.Background(), ev)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		body, header := bodyOf(t, resp), headerOf(resp)
		where := c.method + " " + c.path
		if resp.StatusCode != c.status {
			t.Errorf("%s = %d, want %d: %.200s", where, resp.StatusCode, c.status, body)
			continue
		}
		if got := header.Get("X-Request-Id"); got != id {
			t.Errorf("%s: X-Request-Id %q, want %q", where, got, id)
		}
		if c.code != "" {
			var e struct {
				Error struct {
					Code, Message string
					RequestID     string `json:"request_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != c.code || e.Error.RequestID != id || e.Error.Message == "" {
				t.Errorf("%s: error body %s (want code %s, request_id %s)", where, body, c.code, id)
			}
		}
		if _, err := apidocstest.Check(c.method, c.path, resp.StatusCode, header, body); err != nil {
			t.Errorf("contract: %v", err)
		}
		// The access log: one JSON line with the id, route, status, latency.
		var line map[string]any
		found := false
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Errorf("%s: log line is not JSON: %s", where, l)
				continue
			}
			if line["request_id"] != id {
				t.Errorf("%s: log line without the request id: %s", where, l)
			}
			if line["msg"] == "request" {
				found = true
				if line["status"] != float64(c.status) || line["route"] == nil || line["latency_ms"] == nil {
					t.Errorf("%s: access log %s", where, l)
				}
			}
		}
		if !found {
			t.Errorf("%s: no access log line in %s", where, logs.String())
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%s: the log holds a token", where)
		}
	}
}
