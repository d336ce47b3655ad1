// Package dns is k8sapi's client of the Excloud DNS API: it upserts and
// deletes the A record of a cluster's control-plane name.
//
// The vocabulary (zone_name, name, type, value, ttl) is that of Excloud's
// public Terraform provider. The request paths are not public: they live in
// one table (paths.go), which the local simulator mounts as well.
//
// In: a base URL ($DNS_API_URL, locally $SIM_URL/dns), an *http.Client, and
// per call a context carrying the operator's token (platformauth.WithToken).
// Out: nil, or an error that is *APIError when the API answered non-2xx and a
// wrapped transport error otherwise. DeleteA is idempotent (404 is success).
// DNS is best effort for k8sapi: callers report these errors, they do not
// roll back on them.
package dns
