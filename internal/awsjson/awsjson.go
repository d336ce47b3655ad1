// Package awsjson makes the signed request of one call to an AWS service
// that speaks the JSON 1.1 protocol, without the SDK's client for that
// service: each client links megabytes into a function's binary, and the
// functions make one call each of Secrets Manager (internal/awssecret) and
// CodeDeploy (internal/deployhook).
package awsjson

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Request is the SigV4-signed POST of target (the operation, as
// X-Amz-Target names it, e.g. "secretsmanager.GetSecretValue") to service
// (its signing name, e.g. "secretsmanager") with body, at Endpoint.
func Request(ctx context.Context, cfg aws.Config, service, target string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Endpoint(cfg, service), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", target)
	if cfg.Credentials == nil {
		return nil, errors.New(target + ": no AWS credentials")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: credentials: %w", target, err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, cfg.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("%s: signing: %w", target, err)
	}
	return req, nil
}

// Endpoint is the configured base endpoint (AWS_ENDPOINT_URL), else the
// region's public one for service.
func Endpoint(cfg aws.Config, service string) string {
	if cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" {
		return strings.TrimSuffix(*cfg.BaseEndpoint, "/") + "/"
	}
	return "https://" + service + "." + cfg.Region + ".amazonaws.com/"
}
