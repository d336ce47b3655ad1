package deployhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Event is what CodeDeploy sends a lifecycle hook.
type Event struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Status is what the hook reports of a deployment.
type Status string

// The two statuses a hook reports (CodeDeploy's LifecycleEventStatus).
const (
	Succeeded Status = "Succeeded"
	Failed    Status = "Failed"
)

// Reporter tells CodeDeploy a hook's outcome
// (PutLifecycleEventHookExecutionStatus).
type Reporter interface {
	Report(ctx context.Context, ev Event, status Status) error
}

var _ Reporter = codeDeploy{}

// Hook migrates, then tells CodeDeploy how it went.
type Hook struct {
	Migrate    func(context.Context) error
	CodeDeploy Reporter
	Log        *slog.Logger
}

// Handle is the Lambda handler. A deployment is told Failed for any
// migration error, and the error is also the invocation's (the function's
// Errors alarm). Without a deployment id (an operator invoking the hook to
// migrate by hand) there is nobody to tell.
func (h *Hook) Handle(ctx context.Context, ev Event) error {
	err := h.Migrate(ctx)
	status := Succeeded
	if err != nil {
		status = Failed
		err = fmt.Errorf("migrating: %w", err)
	}
	h.Log.InfoContext(ctx, "deployment hook", "deployment_id", ev.DeploymentID, "status", string(status), "error", errText(err))
	if ev.DeploymentID == "" {
		return err
	}
	return errors.Join(err, h.report(ctx, ev, status))
}

func (h *Hook) report(ctx context.Context, ev Event, status Status) error {
	if err := h.CodeDeploy.Report(ctx, ev, status); err != nil {
		return fmt.Errorf("reporting %s to CodeDeploy: %w", status, err)
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
