package cli

import (
	"errors"
	"fmt"
)

// hints are what to do next after an API error, in CLI commands: the
// API's own messages name routes (GET /clusters/{id}), which an operator
// at a shell does not type. One row per error code that has a next step.
var hints = map[string]string{
	"unauthenticated":           "set K8SAPI_TOKEN (or --token, or token: in the config file) to an operator token of the org",
	"token_scope":               "this is an operator command: use an operator's token, not a VM's",
	"cluster_not_active":        "k8sapi get cluster CLUSTER shows its status; k8sapi wait cluster CLUSTER waits for a founding",
	"founding_in_progress":      "k8sapi wait cluster CLUSTER waits until the founding is over",
	"deletion_in_progress":      "k8sapi delete cluster CLUSTER --wait follows the deletion",
	"cluster_name_taken":        "k8sapi get clusters lists the names in use; rename the file's cluster, or delete the other",
	"idempotency_key_reused":    "a key names one request: drop --idempotency-key for a new one, or repeat the first request as it was",
	"node_pool_exists":          "k8sapi node-pools list CLUSTER shows it; scale it with k8sapi node-pools scale CLUSTER NAME --count N",
	"node_pool_busy":            "k8sapi wait pool CLUSTER NAME waits until its operation is over; then try again",
	"replacement_in_progress":   "k8sapi wait replacement CLUSTER waits until it is over; k8sapi describe cluster CLUSTER shows it",
	"would_lose_quorum":         "wait until every control-plane node is ready (k8sapi get nodes CLUSTER), then replace one at a time",
	"bootstrap_closed":          "k8sapi rebootstrap CLUSTER VM_ID re-opens the node's bootstrap",
	"etcd_snapshot_in_progress": "k8sapi etcd-snapshots list CLUSTER shows when it is done",
	"no_ready_node":             "k8sapi get nodes CLUSTER shows the nodes' phases; a snapshot needs a ready control-plane node",
	"operation_continues":       "the operation goes on without this call: k8sapi describe cluster CLUSTER follows it",
	"rate_limited":              "wait a moment and try again",
	"database_unavailable":      "a fault on k8sapi's side: try again; if it lasts, quote the request_id to k8sapi's operators",
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
