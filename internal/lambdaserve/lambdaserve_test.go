package lambdaserve

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/excloud/k8sapi/internal/requestid"
)

// echo answers with what the handler saw, so the test checks the adapter
// from the handler's side.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Request-Id", requestid.From(r.Context()))
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusTeapot)
	_, _ = w.Write([]byte(r.Method + " " + r.URL.RequestURI()))
})

func event() events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "GET /clusters/{id}", RawPath: "/clusters/7", RawQueryString: "deep=1",
		Headers: map[string]string{"host": "example"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "gw-id",
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/clusters/7", SourceIP: "127.0.0.1"},
		},
	}
}

func TestHandlerPrefersLambdaRequestID(t *testing.T) {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-id"})
	resp, err := Handler(echo)(ctx, event())
	if err != nil {
		t.Fatal(err)
	}
	body := resp.Body
	if resp.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(body)
		body = string(b)
	}
	if resp.StatusCode != http.StatusTeapot || body != "GET /clusters/7?deep=1" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got := resp.Headers["X-Request-Id"]; got != "lambda-id" {
		t.Fatalf("request id %q, want lambda-id", got)
	}
}

func TestHandlerFallsBackToGatewayRequestID(t *testing.T) {
	resp, err := Handler(echo)(context.Background(), event())
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Headers["X-Request-Id"]; got != "gw-id" {
		t.Fatalf("request id %q, want gw-id", got)
	}
}
