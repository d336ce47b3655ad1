package platformhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/excloud/k8sapi/internal/platformauth"
	"github.com/excloud/k8sapi/internal/requestid"
)

// DefaultTimeout bounds one platform call when the caller supplies no
// *http.Client. A Lambda invocation has a hard deadline of its own; a hung
// platform must not eat all of it, so a call that takes longer fails and the
// use case can compensate while it still has time.
const DefaultTimeout = 30 * time.Second

// RequestIDHeader carries the caller's request id to the platform, so one
// operator request can be followed across services' logs.
const RequestIDHeader = "X-Request-Id"

const (
	maxResponseBytes = 1 << 20 // platform answers are small; bound what we read
	maxMessageBytes  = 512     // error text kept from a platform answer
)

// ErrNoToken is returned when a call is attempted without a token in the
// context: the platform would only answer 401, and an anonymous call is a bug.
var ErrNoToken = errors.New("no platform token in context (use platformauth.WithToken)")

// APIError is the platform's answer to a request it refused or failed:
// any non-2xx status.
type APIError struct {
	Service string // "compute", "dns"
	Method  string
	Path    string
	Status  int
	Code    string // the platform's error code, if it gave one
	Message string // the platform's message (truncated), if it gave one
}

func (e *APIError) Error() string {
	msg := e.Message
	if e.Code != "" {
		msg = e.Code + ": " + msg
	}
	return fmt.Sprintf("%s API %s %s: status %d: %s", e.Service, e.Method, e.Path, e.Status, msg)
}

// IsNotFound reports whether err is (or wraps) an *APIError with status 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// Client makes JSON requests to one platform service.
type Client struct {
	service string
	base    string
	hc      *http.Client
}

// New returns a client of the service at baseURL (a trailing slash is
// ignored). A nil hc gets a client with DefaultTimeout.
func New(service, baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{service: service, base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Path fills the {name} placeholders of pattern, pairwise from kv
// ("id", "42", ...), path-escaping each value so a name can never add a path
// segment. It panics on an odd kv or a placeholder left unfilled: both are
// programming errors in a client's fixed table of paths.
func Path(pattern string, kv ...string) string {
	if len(kv)%2 != 0 {
		panic("platformhttp.Path: odd number of key/value arguments")
	}
	p := pattern
	for i := 0; i < len(kv); i += 2 {
		p = strings.ReplaceAll(p, "{"+kv[i]+"}", url.PathEscape(kv[i+1]))
	}
	if strings.ContainsAny(p, "{}") {
		panic("platformhttp.Path: unfilled placeholder in " + pattern)
	}
	return p
}

// IdempotencyKeyHeader carries a create's idempotency token: the platform
// answers a repeat of the same token with the object the first made.
const IdempotencyKeyHeader = "Idempotency-Key"

// OrgHeader names the org a service principal acts for (see platformauth.WithOrg).
const OrgHeader = "X-Excloud-Org-Id"

// Do sends method path with in (if not nil) as the JSON body and decodes a
// 2xx JSON answer into out (if not nil). See the package doc for errors.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, "", in, out)
}

// Create POSTs in to path under idempotencyKey, decoding the answer into out.
func (c *Client) Create(ctx context.Context, path, idempotencyKey string, in, out any) error {
	return c.do(ctx, http.MethodPost, path, idempotencyKey, in, out)
}

func (c *Client) do(ctx context.Context, method, path, idempotencyKey string, in, out any) error {
	token, ok := platformauth.Token(ctx)
	if !ok {
		return fmt.Errorf("%s API %s %s: %w", c.service, method, path, ErrNoToken)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s API %s %s: encoding request: %w", c.service, method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s API %s %s: building request: %w", c.service, method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if id := requestid.From(ctx); id != "" {
		req.Header.Set(RequestIDHeader, id)
	}
	if idempotencyKey != "" {
		req.Header.Set(IdempotencyKeyHeader, idempotencyKey)
	}
	if org, ok := platformauth.Org(ctx); ok {
		req.Header.Set(OrgHeader, strconv.FormatInt(org, 10))
	}

	resp, err := c.hc.Do(req)
	if err != nil {
		// *url.Error carries the URL; the wrapped cause (timeout, refused,
		// context canceled) stays reachable with errors.Is/As.
		return fmt.Errorf("%s API %s %s: %w", c.service, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s API %s %s: reading response: %w", c.service, method, path, err)
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := &APIError{Service: c.service, Method: method, Path: path, Status: resp.StatusCode}
		ae.Code, ae.Message = parseError(raw)
		if ae.Message == "" {
			ae.Message = http.StatusText(resp.StatusCode)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s API %s %s: decoding %d response: %w", c.service, method, path, resp.StatusCode, err)
	}
	return nil
}

// parseError reads the platform's error convention; a body in any other
// shape is kept as the message (truncated, valid UTF-8), since it is still the
// best clue to what happened.
func parseError(raw []byte) (code, message string) {
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && (env.Error.Code != "" || env.Error.Message != "") {
		return env.Error.Code, truncate(env.Error.Message)
	}
	return "", truncate(strings.TrimSpace(string(raw)))
}

func truncate(s string) string {
	if len(s) <= maxMessageBytes {
		return strings.ToValidUTF8(s, "")
	}
	// A rune cut in half becomes invalid bytes, which ToValidUTF8 drops.
	return strings.ToValidUTF8(s[:maxMessageBytes], "") + "…"
}
