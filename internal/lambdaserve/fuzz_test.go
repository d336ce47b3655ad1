package lambdaserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/api"
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/auth"
	"github.com/excloud/k8sapi/internal/vmlimit"
)

// refuseAll is an authenticator that lets nobody in, so the fuzzed events
// run the real handlers up to their first proof without a database.
type refuseAll struct{}

func (refuseAll) Operator(context.Context, string) (auth.Principal, error) {
	return auth.Principal{}, apperr.Unauthenticated.Detail("no")
}

func (refuseAll) ProveVM(context.Context, int64, string, string, *vmlimit.Count) (auth.BootstrapVM, *vmlimit.Window, error) {
	return auth.BootstrapVM{}, nil, apperr.Unauthenticated.Detail("no")
}

// FuzzHandler drives the API Gateway v2 adapter with random events in front
// of the real route handlers (every function's) and the echo handler: it
// never panics and always answers with a response; the API's answers are
// JSON.
func FuzzHandler(f *testing.F) {
	f.Add("GET", "/clusters/7", "deep=1", "", false, "authorization", "Bearer x", "GET /clusters/{id}", "7", "")
	f.Add("POST", "/clusters", "", `{"control_plane_image_id":1}`, false, "content-type", "application/json", "POST /clusters", "", "a=b")
	f.Add("GET", "/bootstrap/control-plane/1%2F..%2F2", "", "", false, "x-exc-imds-token", "t", "GET /bootstrap/control-plane/{vm_id}", "1/../2", "")
	f.Add("GET", "/bootstrap/control-plane/../1", "a=%zz", "", false, "", "", "$default", "", "")
	f.Add("DELETE", "/clusters/%00", "", "eyJ4IjoxfQ==", true, "Authorization", "Bearer \x00", "DELETE /clusters/{id}", "\x00", "")
	f.Add("POST", "/clusters", "", "not base64!", true, "content-length", "-1", "POST /clusters", "", "")
	f.Add("", "", "", "", false, "", "", "", "", "")
	f.Add("G ET", "clusters", "%", "", false, "host", "\r\nx", "", "", ";;")
	f.Add("GET", "//health", "deep=1&deep=0", "", false, "x-forwarded-for", "1.1.1.1", "GET /health", "", "")
	f.Add("GET", "http://evil.example/health", "", "", false, "", "", "", "", "")

	// One adapter per function, as Lambda runs them, plus the echo handler.
	s := &api.Server{Auth: refuseAll{}, Limits: &vmlimit.Limiter{}, Log: slog.New(slog.DiscardHandler)}
	handlers := map[string]func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error){
		"echo": Handler(echo),
	}
	for _, fn := range []string{"HealthFunction", "CreateClusterFunction", "ClustersFunction", "GetBundleFunction"} {
		handlers[fn] = Handler(s.Handler(api.FunctionNamed(fn)))
	}

	f.Fuzz(func(t *testing.T, method, rawPath, rawQuery, body string, b64 bool, hk, hv, routeKey, pathParam, cookie string) {
		ev := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: routeKey, RawPath: rawPath, RawQueryString: rawQuery,
			Body: body, IsBase64Encoded: b64,
			Headers:        map[string]string{hk: hv},
			PathParameters: map[string]string{"id": pathParam, "vm_id": pathParam},
			Cookies:        []string{cookie},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RequestID: "fuzz",
				HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath, SourceIP: "127.0.0.1"},
			},
		}
		for name, h := range handlers {
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatalf("%s: no response, error %v for %+v", name, err, ev)
			}
			if resp.StatusCode < 100 || resp.StatusCode > 599 {
				t.Fatalf("%s: status %d", name, resp.StatusCode)
			}
			if name != "echo" {
				out := resp.Body
				if resp.IsBase64Encoded {
					b, err := base64.StdEncoding.DecodeString(out)
					if err != nil {
						t.Fatalf("%s: bad base64 body: %v", name, err)
					}
					out = string(b)
				}
				if !json.Valid([]byte(out)) {
					t.Fatalf("%s: %d answered non-JSON %q for %+v", name, resp.StatusCode, out, ev)
				}
			}
		}
	})
}

// TestUnreadableEventIsJSON400: where the proxy library would fail the
// invocation, the adapter answers a JSON 400 with the gateway's request id.
func TestUnreadableEventIsJSON400(t *testing.T) {
	for name, ev := range map[string]events.APIGatewayV2HTTPRequest{
		"bad base64":     {RawPath: "/clusters", Body: "not base64!", IsBase64Encoded: true},
		"invalid method": {RawPath: "/clusters"},
	} {
		ev.Version, ev.RequestContext.RequestID = "2.0", "gw-id"
		ev.RequestContext.HTTP.Method = "POST"
		if name == "invalid method" {
			ev.RequestContext.HTTP.Method = "G ET"
		}
		resp, err := Handler(echo)(context.Background(), ev)
		if err != nil || resp.StatusCode != 400 || resp.Body != `{"error":{"code":"invalid_request","message":"the request could not be read","request_id":"gw-id"}}`+"\n" {
			t.Errorf("%s: %d %q %v", name, resp.StatusCode, resp.Body, err)
		}
	}
}
