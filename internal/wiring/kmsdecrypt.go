package wiring

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
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"

	"github.com/excloud/k8sapi/internal/awsjson"
)

// GetBundleFunction opens data keys and never makes one: its KMS use is
// one call, Decrypt, made here as one signed JSON 1.1 request
// (internal/awsjson) instead of through the SDK's KMS client, which is
// about 300 KB of the function's 12 MiB budget (.ci/check-lambda-builds);
// the etcd snapshot routes needed that room. The envelope sees the SDK's
// types: the input and output, and an error that is a smithy.APIError, so
// it tells a refusal from an outage as it does for the client's.

// kmsDecryptAttempts: the SDK's standard retryer makes three.
const kmsDecryptAttempts = 3

// maxKMSAnswer bounds a Decrypt answer (a data key, its key id).
const maxKMSAnswer = 64 << 10

// kmsError is a KMS error answer, as the SDK's client reports one.
type kmsError struct {
	code, message string
	status        int
}

func (e *kmsError) Error() string {
	return fmt.Sprintf("kms Decrypt: %s (HTTP %d): %s", e.code, e.status, e.message)
}
func (e *kmsError) ErrorCode() string    { return e.code }
func (e *kmsError) ErrorMessage() string { return e.message }

// ErrorFault: KMS's own trouble (5xx) is the server's; anything it
// refused (4xx) is the caller's.
func (e *kmsError) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

var _ smithy.APIError = (*kmsError)(nil)

// kmsDecryptCall is Decrypt over cfg's endpoint and credentials.
func kmsDecryptCall(cfg aws.Config, hc *http.Client) func(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return func(ctx context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
		body, err := json.Marshal(struct {
			CiphertextBlob    []byte            // base64, as the JSON protocol spells a blob
			KeyId             *string           `json:",omitempty"`
			EncryptionContext map[string]string `json:",omitempty"`
		}{in.CiphertextBlob, in.KeyId, in.EncryptionContext})
		if err != nil {
			return nil, err
		}
		for i := range kmsDecryptAttempts {
			out, retry, err := kmsDecryptOnce(ctx, cfg, hc, body)
			if err == nil || !retry || i == kmsDecryptAttempts-1 {
				return out, err
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond << i):
			}
		}
		return nil, errors.New("kms Decrypt: no attempt") // unreachable
	}
}

func kmsDecryptOnce(ctx context.Context, cfg aws.Config, hc *http.Client, body []byte) (*kms.DecryptOutput, bool, error) {
	req, err := awsjson.Request(ctx, cfg, "kms", "TrentService.Decrypt", body)
	if err != nil {
		return nil, false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("kms Decrypt: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxKMSAnswer))
	if err != nil {
		return nil, true, fmt.Errorf("kms Decrypt: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(answer, &e)
		ke := &kmsError{code: e.Type[strings.LastIndex(e.Type, "#")+1:], message: e.Message, status: resp.StatusCode}
		if ke.code == "" {
			ke.code = "UnknownError"
		}
		return nil, resp.StatusCode >= 500 || strings.Contains(ke.code, "Throttling"), ke
	}
	var out struct {
		KeyId     *string
		Plaintext []byte
	}
	if err := json.Unmarshal(answer, &out); err != nil || len(out.Plaintext) == 0 {
		return nil, false, errors.New("kms Decrypt: the answer holds no Plaintext")
	}
	return &kms.DecryptOutput{KeyId: out.KeyId, Plaintext: out.Plaintext}, false, nil
}

// refuseGenerate is the GenerateDataKey of a function that never makes a
// data key (its key policy grants Decrypt only).
func refuseGenerate(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return nil, errors.New("kms GenerateDataKey: this function opens data keys only")
}

// refuseDecrypt is the Decrypt of a function that never opens a data key
// (its key policy grants it nothing).
func refuseDecrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return nil, errors.New("kms Decrypt: this function opens no data keys")
}
