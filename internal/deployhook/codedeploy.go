package deployhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// codeDeploy makes the hook's one CodeDeploy call, PutLifecycleEventHookExecutionStatus,
// as a SigV4-signed JSON request. Not the SDK's client: it would add 2 MB
// to a binary held to 15 MiB for one call of a stable JSON protocol.
type codeDeploy struct {
	aws    aws.Config
	client *http.Client
}

// hookStatus is the call's body (the API's member names).
type hookStatus struct {
	DeploymentID                  string `json:"deploymentId"`
	LifecycleEventHookExecutionID string `json:"lifecycleEventHookExecutionId"`
	Status                        string `json:"status"`
}

func (c codeDeploy) Report(ctx context.Context, ev Event, status Status) error {
	body, err := json.Marshal(hookStatus{ev.DeploymentID, ev.LifecycleEventHookExecutionID, string(status)})
	if err != nil {
		return err
	}
	req, err := c.request(ctx, body)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("CodeDeploy answered %d: %s", resp.StatusCode, msg)
	}
	return nil
}

// request is the signed POST: the JSON 1.1 protocol names the operation in
// X-Amz-Target.
func (c codeDeploy) request(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus")
	if c.aws.Credentials == nil {
		return nil, fmt.Errorf("no AWS credentials in the environment")
	}
	creds, err := c.aws.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	err = v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "codedeploy", c.aws.Region, time.Now())
	return req, err
}

// endpoint is AWS_ENDPOINT_URL when set, else the region's public one.
func (c codeDeploy) endpoint() string {
	if c.aws.BaseEndpoint != nil {
		return *c.aws.BaseEndpoint
	}
	return "https://codedeploy." + c.aws.Region + ".amazonaws.com/"
}
