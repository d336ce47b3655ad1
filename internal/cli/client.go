package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// Client speaks k8sapi's operator routes with one bearer token.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// APIError is an answer of the API other than 2xx: its status and the
// error body's code, message and request id, shown to the operator as
// they came so they can be quoted back.
type APIError struct {
	Status    int
	Code      string
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.Code != "" {
		b.WriteString(e.Code + ": ")
	}
	b.WriteString(e.Message)
	fmt.Fprintf(&b, " (HTTP %d", e.Status)
	if e.RequestID != "" {
		b.WriteString(", request_id " + e.RequestID)
	}
	b.WriteString(")")
	return b.String()
}

// response is a 2xx answer: its status, headers and raw body (printed as
// is by -o json, so fields this client does not know are not lost).
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// request is one call: method, path (with query), JSON body (nil: none)
// and extra headers.
type request struct {
	Method  string
	Path    string
	Body    any
	Headers map[string]string
}

// do sends req and returns its 2xx answer, or an *APIError.
func (c *Client) do(ctx context.Context, req request) (*response, error) {
	hr, err := c.newHTTPRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := c.httpClient().Do(hr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("calling k8sapi: nothing answers at %s (connection refused): is the API at $K8SAPI_URL running? "+
			"(--url, K8SAPI_URL or url: in the config file name it; make local starts a local one): %w", c.BaseURL, err)
	}
	if err != nil {
		return nil, fmt.Errorf("calling k8sapi: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading k8sapi's answer: %w", err)
	}
	if res.StatusCode/100 != 2 {
		return nil, apiErrorOf(res, body)
	}
	return &response{Status: res.StatusCode, Header: res.Header, Body: body}, nil
}

func (c *Client) newHTTPRequest(ctx context.Context, req request) (*http.Request, error) {
	var body io.Reader
	if req.Body != nil {
		b, err := json.Marshal(req.Body)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, strings.TrimRight(c.BaseURL, "/")+req.Path, body)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Authorization", "Bearer "+c.Token)
	hr.Header.Set("Accept", "application/json")
	if req.Body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	return hr, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// apiErrorOf reads the API's error body; a body that is not one (a proxy's
// page) is shown by its status and first bytes instead.
func apiErrorOf(res *http.Response, body []byte) *APIError {
	var e struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	out := &APIError{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		out.Code, out.Message = e.Error.Code, e.Error.Message
		if e.Error.RequestID != "" {
			out.RequestID = e.Error.RequestID
		}
		return out
	}
	out.Message = http.StatusText(res.StatusCode) + ": " + snippet(body)
	return out
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// getJSON GETs path into out and returns the raw answer.
func (c *Client) getJSON(ctx context.Context, path string, out any) (*response, error) {
	return c.call(ctx, request{Method: http.MethodGet, Path: path}, out)
}

// call does req and decodes its answer into out.
func (c *Client) call(ctx context.Context, req request, out any) (*response, error) {
	res, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return nil, fmt.Errorf("k8sapi's answer to %s %s is not what this CLI expects: %w", req.Method, req.Path, err)
	}
	return res, nil
}
