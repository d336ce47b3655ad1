// Package founding is the POST /clusters use case and the cluster lifecycle
// around it (list, get, delete).
//
// In: an authenticated org, the operator's bearer token (the platform APIs
// act on the org's behalf), the request body, an optional idempotency key.
// Out: a Result (cluster id, names, VM ids, a fresh admin kubeconfig) or an
// *apperr.Error. The order is the seed's: validate → trust → transaction →
// security groups → VMs → addresses → certs → rows → admin kubeconfig →
// commit → DNS. What the seed leaves rough is made right: any failure after
// the first VM exists deletes every VM (and the security group) created so
// far and rolls the transaction back, so a cluster is founded whole or not
// at all; DNS stays best effort. Before any remote call the cluster's
// artifact set is fixed (artifacts.go): recorded on its row, or refused
// (422 artifacts_not_pinned) when its nodes could not verify a download.
package founding
