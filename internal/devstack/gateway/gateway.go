package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/excloud/k8sapi/internal/apperr"
	"github.com/excloud/k8sapi/internal/devstack/lambdaruntime"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// MaxRequestBody is API Gateway's own payload limit. The gateway enforces
// only this; the 64 KiB API limit is the functions' to enforce, so local
// requests reach them exactly as in AWS.
const MaxRequestBody = 10 << 20

// Gateway is a local API Gateway HTTP API (payload format 2.0): it routes
// requests by template.yaml's HttpApi events, turns each into an
// events.APIGatewayV2HTTPRequest, invokes the function and turns its
// response back into HTTP.
type Gateway struct {
	router    *router
	functions map[string]lambdaruntime.Invoker // by logical id
	log       *slog.Logger
}

// NewGateway routes t's HttpApi events to functions (keyed by logical id).
func NewGateway(t *samtemplate.Template, functions map[string]lambdaruntime.Invoker, log *slog.Logger) (*Gateway, error) {
	for _, f := range t.Functions {
		if len(f.Routes) > 0 && functions[f.LogicalID] == nil {
			return nil, fmt.Errorf("gateway: no invoker for %s", f.LogicalID)
		}
	}
	return &Gateway{router: newRouter(t), functions: functions, log: log}, nil
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := lambdaruntime.NewRequestID()
	w.Header().Set("Apigw-Requestid", requestID)
	fn, route, params, ok := g.router.match(r.Method, r.URL.Path)
	if !ok {
		writeGatewayError(w, g.unmatched(w, r), requestID)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeGatewayError(w, apperr.BodyTooLarge.Detail("request body exceeds 10 MB"), requestID)
			return
		}
		writeGatewayError(w, apperr.InvalidRequest.Detail("reading the request body failed"), requestID)
		return
	}
	event := toEvent(r, route, params, body, requestID)
	payload, err := json.Marshal(event)
	if err != nil {
		writeGatewayError(w, apperr.Internal.Detail("encoding the event failed"), requestID)
		return
	}
	start := time.Now()
	out, err := g.functions[fn].Invoke(r.Context(), payload)
	if err != nil {
		g.log.Warn("gateway: invocation failed", "function", fn, "route", route.Key(), "err", err)
		writeGatewayError(w, apperr.BadGateway.Detail(badGatewayMessage(fn, err)), requestID)
		return
	}
	resp, err := fromResponse(out)
	if err != nil {
		g.log.Warn("gateway: invalid function response", "function", fn, "err", err)
		writeGatewayError(w, apperr.BadGateway.Detail(fn+" returned an invalid response"), requestID)
		return
	}
	g.log.Debug("gateway", "route", route.Key(), "path", r.URL.Path, "function", fn, "status", resp.StatusCode, "took", time.Since(start))
	writeResponse(w, resp, requestID)
}

// badGatewayMessage says what went wrong without passing on what the
// function said (its error text is for its logs, as in AWS).
func badGatewayMessage(fn string, err error) string {
	var fe *lambdaruntime.FunctionError
	switch {
	case errors.Is(err, lambdaruntime.ErrTimeout):
		return fn + " timed out"
	case errors.Is(err, lambdaruntime.ErrCrashed):
		return fn + " crashed"
	case errors.As(err, &fe):
		return fn + " failed with an unhandled error"
	default:
		return fn + " could not be invoked"
	}
}

// toEvent builds the payload format 2.0 event API Gateway would send.
func toEvent(r *http.Request, route samtemplate.Route, params map[string]string, body []byte, requestID string) events.APIGatewayV2HTTPRequest {
	now := time.Now()
	headers, cookies := eventHeaders(r)
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	headers["x-forwarded-for"] = sourceIP
	query := eventQuery(r)
	if len(params) == 0 {
		params = nil
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Key(),
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Key(),
			AccountID:    localaws.AccountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// eventHeaders are the request's headers as payload 2.0 carries them:
// lower-case names, repeated values joined by commas, cookies moved out into
// their own list, and the headers the gateway itself adds.
func eventHeaders(r *http.Request) (headers map[string]string, cookies []string) {
	headers = map[string]string{}
	for name, vals := range r.Header {
		lname := strings.ToLower(name)
		if lname != "cookie" {
			headers[lname] = strings.Join(vals, ",")
			continue
		}
		for _, v := range vals {
			for _, c := range strings.Split(v, ";") {
				if c = strings.TrimSpace(c); c != "" {
					cookies = append(cookies, c)
				}
			}
		}
	}
	headers["host"] = r.Host
	headers["x-forwarded-proto"] = "http"
	return headers, cookies
}

// eventQuery is the query as payload 2.0 carries it: nil when empty,
// repeated keys joined by commas.
func eventQuery(r *http.Request) map[string]string {
	q := r.URL.Query()
	if len(q) == 0 {
		return nil
	}
	query := make(map[string]string, len(q))
	for k, vs := range q {
		query[k] = strings.Join(vs, ",")
	}
	return query
}

// fromResponse interprets a function's payload as API Gateway does for
// payload 2.0: an object with statusCode is a structured response; any
// other valid JSON is the body of a 200 application/json response.
func fromResponse(payload []byte) (events.APIGatewayV2HTTPResponse, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err == nil {
		if _, ok := probe["statusCode"]; ok {
			var resp events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(payload, &resp); err != nil {
				return resp, fmt.Errorf("decoding the response: %w", err)
			}
			if resp.StatusCode < 100 || resp.StatusCode > 599 {
				return resp, fmt.Errorf("status code %d out of range", resp.StatusCode)
			}
			return resp, nil
		}
	}
	if !json.Valid(payload) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("the response is not JSON")
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(payload),
	}, nil
}

func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse, requestID string) {
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeGatewayError(w, apperr.BadGateway.Detail("the function's base64 body does not decode"), requestID)
			return
		}
		body = b
	}
	h := w.Header()
	for _, k := range slices.Sorted(maps.Keys(resp.MultiValueHeaders)) {
		for _, v := range resp.MultiValueHeaders[k] {
			h.Add(k, v)
		}
	}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// unmatched is the error of a request no route takes: a path some route
// serves under other methods is a 405 whose Allow names them; any other
// path is a 404.
func (g *Gateway) unmatched(w http.ResponseWriter, r *http.Request) *apperr.Error {
	allowed := g.router.allowed(r.URL.Path)
	if len(allowed) == 0 {
		return apperr.NotFound.Detailf("no route for %s %s", r.Method, r.URL.Path)
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return apperr.MethodNotAllowed.Detailf("%s takes %s", r.URL.Path, strings.Join(allowed, ", "))
}

// writeGatewayError answers in the project's error shape, under the
// gateway's own request id (no function ran to give one), in the header
// every answer carries and in the body, so even a request that never
// reached a function can be quoted.
func writeGatewayError(w http.ResponseWriter, e *apperr.Error, requestID string) {
	w.Header().Set("X-Request-Id", requestID)
	apperr.WriteJSON(w, e, requestID)
}
