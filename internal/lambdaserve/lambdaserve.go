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
	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/requestid"
)

// Start serves h for the Lambda runtime and never returns.
func Start(h http.Handler) { lambda.Start(Handler(h)) }

// Handler adapts h to the Lambda handler signature for API Gateway v2
// events. Exposed so tests can drive the adapter without a runtime.
//
// It always answers: an event that is no valid HTTP request (a method
// net/http refuses, a body flagged base64 that is not) is a JSON 400, where
// the proxy library would fail the invocation (API Gateway's bare 500).
func Handler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	h = WithRequestID(h)
	var accessor core.RequestAccessorV2 // what httpadapter.NewV2 embeds
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		req, err := accessor.EventToRequestWithContext(ctx, ev)
		id := idFrom(ctx)
		if id == "" {
			id = ev.RequestContext.RequestID
		}
		if err != nil {
			return errorResponse(id, apperr.InvalidRequest.New()), nil
		}
		w := core.NewProxyResponseWriterV2()
		h.ServeHTTP(w, req)
		resp, err := w.GetProxyResponse()
		if err != nil {
			return errorResponse(id, apperr.Internal.New()), nil
		}
		return resp, nil
	}
}

// errorResponse is the API's JSON error shape, for the answers given before
// or after the handler runs.
func errorResponse(requestID string, e *apperr.Error) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: e.Status(), Body: string(apperr.Body(e, requestID)),
		Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
	}
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
