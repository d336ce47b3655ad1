// Package lambdaserve runs a plain net/http handler as a Lambda function
// behind an API Gateway HTTP API (payload v2). It is the only package that
// imports Lambda types; handlers see an ordinary *http.Request whose context
// carries the request id (internal/requestid).
package lambdaserve

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/excloud/k8sapi/internal/requestid"
)

// Start serves h for the Lambda runtime and never returns.
func Start(h http.Handler) { lambda.Start(Handler(h)) }

// Handler adapts h to the Lambda handler signature for API Gateway v2
// events. Exposed so tests can drive the adapter without a runtime.
func Handler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return httpadapter.NewV2(WithRequestID(h)).ProxyWithContext
}

// WithRequestID puts the request id into the request's context: Lambda's
// own request id (what CloudWatch logs carry) when present, else API
// Gateway's requestContext.requestId.
func WithRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := idFrom(r.Context()); id != "" {
			r = r.WithContext(requestid.With(r.Context(), id))
		}
		h.ServeHTTP(w, r)
	})
}

func idFrom(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	if gw, ok := core.GetAPIGatewayV2ContextFromContext(ctx); ok {
		return gw.RequestID
	}
	return ""
}
