// Package compute is k8sapi's client of the Excloud compute API: subnets,
// security groups and their rules, and instances (VMs).
//
// The vocabulary (field names and values such as protocol "TCPv4" or port
// range "ANY") is that of Excloud's public Terraform provider. The request
// paths are not public: they live in one table (paths.go), which the local
// simulator (internal/simulator) mounts as well, so client and simulator
// cannot drift apart silently.
//
// In: a base URL ($COMPUTE_API_URL, locally $SIM_URL/compute), an
// *http.Client, and per call a context carrying the operator's token
// (platformauth.WithToken) and, if any, the request id (internal/requestid).
// Out: ids and read-backs; errors are *APIError when the platform answered
// non-2xx (IsNotFound for 404) and wrapped transport errors otherwise.
// DeleteInstance and DeleteSecurityGroup are idempotent: 404 is success, so
// compensation can be retried safely.
package compute
