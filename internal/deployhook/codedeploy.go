package deployhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/excloud/k8sapi/internal/awsjson"
)

// codeDeploy makes the hook's one CodeDeploy call, PutLifecycleEventHookExecutionStatus,
// as a SigV4-signed JSON request. Not the SDK's client: it would add 2 MB
// to a binary held to 12 MiB for one call of a stable JSON protocol.
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
	return awsjson.Request(ctx, c.aws, "codedeploy", "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus", body)
}
