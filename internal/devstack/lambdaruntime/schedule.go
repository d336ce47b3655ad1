package lambdaruntime

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
)

// LocalSchedule is how often the local stack runs a function that has a
// Schedule event, whatever its rate in template.yaml: a developer should not
// wait a minute for the reconciler.
const LocalSchedule = 10 * time.Second

// scheduledEvent is the EventBridge event a Schedule invocation carries.
type scheduledEvent struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     struct{} `json:"detail"`
}

// RunSchedules invokes every function of t that has a Schedule every
// period until ctx ends, as EventBridge would (one invocation at a time per
// function: a run still going when the next is due delays it).
func RunSchedules(ctx context.Context, t *samtemplate.Template, invokers map[string]Invoker, period time.Duration, log *slog.Logger) {
	for _, f := range t.Functions {
		if f.Schedule == 0 || invokers[f.LogicalID] == nil {
			continue
		}
		go runSchedule(ctx, f.LogicalID, invokers[f.LogicalID], period, log)
	}
}

func runSchedule(ctx context.Context, id string, inv Invoker, period time.Duration, log *slog.Logger) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			ev, _ := json.Marshal(scheduledEvent{Version: "0", ID: NewRequestID(), DetailType: "Scheduled Event",
				Source: "aws.events", Time: now.UTC().Format(time.RFC3339), Region: localaws.LocalRegion, Resources: []string{}})
			if _, err := inv.Invoke(ctx, ev); err != nil && ctx.Err() == nil {
				log.Warn("scheduled invocation failed", "function", id, "error", err.Error())
			}
		}
	}
}
