// Package awssecret reads secrets from AWS Secrets Manager: the one call
// k8sapi makes of it (GetSecretValue, for a function's database
// credentials and the reconciler's service token, once per cold start).
//
// Why not the SDK's Secrets Manager client: importing it registers the
// schemas of all its operations at init, in every binary that links it
// (about 200 KB of each function, which held the functions above their
// 12 MiB budget). The call itself is small: Secrets Manager's JSON 1.1
// protocol, signed with the SDK's own SigV4 signer and credentials, the
// endpoint the SDK would use (AWS_ENDPOINT_URL when set, else the
// region's), and a few retries of what the SDK retries too (no answer,
// 5xx, throttling).
//
// In: an aws.Config (region, credentials, optional base endpoint). Out: a
// secret's string, or an error naming the service's error type (never the
// secret).
package awssecret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/excloud/k8sapi/internal/awsjson"
	"github.com/excloud/k8sapi/internal/config"
)

// attempts and backoff bound the retries of one call.
const (
	attempts = 3
	backoff  = 200 * time.Millisecond
)

// maxAnswer bounds what is read of an answer: a secret is at most 64 KiB.
const maxAnswer = 1 << 20

// Client reads secrets.
type Client struct {
	cfg  aws.Config
	http *http.Client
}

// New is a client of cfg's region and credentials.
func New(cfg aws.Config) *Client {
	return &Client{cfg: cfg, http: &http.Client{Timeout: 10 * time.Second}}
}

// SecretString is the string of the secret id (a name or an ARN).
func (c *Client) SecretString(ctx context.Context, id string) (string, error) {
	body, _ := json.Marshal(map[string]string{"SecretId": id}) // a map of strings always marshals
	var err error
	for i := range attempts {
		var s string
		var retry bool
		if s, retry, err = c.call(ctx, body); err == nil || !retry {
			return s, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(backoff << i):
		}
	}
	return "", err
}

// call makes one signed GetSecretValue call; retry says whether another
// attempt may answer otherwise.
func (c *Client) call(ctx context.Context, body []byte) (string, bool, error) {
	req, err := c.request(ctx, body)
	if err != nil {
		return "", false, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", true, fmt.Errorf("secretsmanager GetSecretValue: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", true, fmt.Errorf("secretsmanager GetSecretValue: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", retryable(resp.StatusCode, answer), serviceError(resp.StatusCode, answer)
	}
	var out struct{ SecretString *string }
	if err := json.Unmarshal(answer, &out); err != nil || out.SecretString == nil {
		return "", false, errors.New("secretsmanager GetSecretValue: the answer holds no SecretString")
	}
	return *out.SecretString, false, nil
}

// request is the signed request of one call.
func (c *Client) request(ctx context.Context, body []byte) (*http.Request, error) {
	return awsjson.Request(ctx, c.cfg, "secretsmanager", "secretsmanager.GetSecretValue", body)
}

// retryable: the service's own trouble and throttling may pass; anything
// else the caller asked for (no such secret, no right to it) will not.
func retryable(status int, answer []byte) bool {
	return status >= 500 || strings.Contains(errorType(answer), "Throttling")
}

// serviceError names the service's error type and status; its message may
// quote the secret's id, never its value.
func serviceError(status int, answer []byte) error {
	return fmt.Errorf("secretsmanager GetSecretValue: %s (HTTP %d)", errorType(answer), status)
}

// errorType is the JSON protocol's __type, without its namespace.
func errorType(answer []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(answer, &e) != nil || e.Type == "" {
		return "unknown error"
	}
	return e.Type[strings.LastIndex(e.Type, "#")+1:]
}

// DatabaseFromEnv is the AWS configuration of the environment and the DSN
// cfg names: DATABASE_URL as it is, else the secret DB_SECRET_ARN names,
// read with a client of that configuration. The one place the functions,
// the migrations hook and k8sapi-migrate learn their database.
func DatabaseFromEnv(ctx context.Context, cfg config.Config) (string, aws.Config, error) {
	awsCfg, err := config.AWS(ctx)
	if err != nil {
		return "", awsCfg, err
	}
	var secrets config.SecretGetter
	if cfg.DatabaseURL == "" {
		secrets = New(awsCfg)
	}
	dsn, err := config.DatabaseDSN(ctx, cfg, secrets)
	return dsn, awsCfg, err
}
