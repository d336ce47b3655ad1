package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/excloud/k8sapi/internal/store"
)

// workerPools moves each pool's workers to the pass's version. Moving
// them by surge is not built yet (docs/UPGRADES.md): a pass whose
// workers are behind pauses here, naming the first, with the control
// plane done; the workers stay one minor behind the API servers, which
// the skew policy allows.
func (s *Service) workerPools(_ context.Context, r *run, _ time.Time) error {
	for _, n := range live(r.nodes) {
		if n.Role == store.RoleWorker && n.KubernetesVersion != r.u.PassVersion {
			return &paused{node: n.Name, reason: fmt.Sprintf("worker pools: every API server is at %s; %s is at %s, and moving "+
				"workers by surge is not built yet: replace the pool's workers by a new pool at the cluster's version", r.u.PassVersion, n.Name, n.KubernetesVersion)}
		}
	}
	return nil
}
