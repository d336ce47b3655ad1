package cli

import (
	"errors"
	"fmt"

	"github.com/excloud/k8sapi/internal/apperr"
)

// hints are what to do next after an API error, in CLI commands: the
// API's own messages name routes (GET /clusters/{id}), which an operator
// at a shell does not type. One row per error code that has a next step.
var hints = map[string]string{
	apperr.Unauthenticated.String():        "set K8SAPI_TOKEN (or --token, or token: in the config file) to an operator token of the org",
	apperr.TokenScope.String():             "this is an operator command: use an operator's token, not a VM's",
	apperr.ClusterNotActive.String():       "k8sapi get cluster CLUSTER shows its status; k8sapi wait cluster CLUSTER waits for a founding",
	apperr.FoundingInProgress.String():     "k8sapi wait cluster CLUSTER waits until the founding is over",
	apperr.DeletionInProgress.String():     "k8sapi delete cluster CLUSTER --wait follows the deletion",
	apperr.ClusterNameTaken.String():       "k8sapi get clusters lists the names in use; rename the file's cluster, or delete the other",
	apperr.IdempotencyKeyReused.String():   "a key names one request: drop --idempotency-key for a new one, or repeat the first request as it was",
	apperr.NodePoolExists.String():         "k8sapi node-pools list CLUSTER shows it; scale it with k8sapi node-pools scale CLUSTER NAME --count N",
	apperr.NodePoolBusy.String():           "k8sapi wait pool CLUSTER NAME waits until its operation is over; then try again",
	apperr.ReplacementInProgress.String():  "k8sapi wait replacement CLUSTER waits until it is over; k8sapi describe cluster CLUSTER shows it",
	apperr.WouldLoseQuorum.String():        "wait until every control-plane node is ready (k8sapi get nodes CLUSTER), then replace one at a time",
	apperr.BootstrapClosed.String():        "k8sapi rebootstrap CLUSTER VM_ID re-opens the node's bootstrap",
	apperr.EtcdSnapshotInProgress.String(): "k8sapi etcd-snapshots list CLUSTER shows when it is done",
	apperr.NoReadyNode.String():            "k8sapi get nodes CLUSTER shows the nodes' phases; a snapshot needs a ready control-plane node",
	apperr.OperationContinues.String():     "the operation goes on without this call: k8sapi describe cluster CLUSTER follows it",
	apperr.RateLimited.String():            "wait a moment and try again",
	apperr.DatabaseUnavailable.String():    "a fault on k8sapi's side: try again; if it lasts, quote the request_id to k8sapi's operators",
}

// withHint adds to err, when it is an API error with a next step, that
// step.
func withHint(err error) error {
	var api *APIError
	if !errors.As(err, &api) {
		return err
	}
	if hint, ok := hints[api.Code]; ok {
		return fmt.Errorf("%w\nhint: %s", err, hint)
	}
	return err
}
