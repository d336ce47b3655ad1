// Package simulator is a LOCAL-ONLY simulator of the Excloud platform
// services k8sapi depends on and that do not exist on a developer machine:
// the compute API, the DNS API and the instance metadata service (IMDS).
// It is not Excloud: every response carries "X-Excloud-Simulator: true".
// Never deploy it.
//
// In: Config{DB, Logger, Now}: a pool on the same Postgres k8sapi uses, with
// the dev platform migrations (migrations.PlatformDev) applied.
// Out: Handler(), one http.Handler serving
//
//	/compute/...  the paths of internal/compute (compute.Path*), bearer-authenticated
//	/dns/...      the paths of internal/dns (dns.Path*), bearer-authenticated
//	/imds/{vm_id}/token                           GET or PUT: a new IMDS session token (text/plain)
//	/imds/{vm_id}/latest/identity/node-identity   {"node_id": N}          (X-exc-imds-token)
//	/imds/{vm_id}/latest/identity/access-token    {"access_token": "..."} (X-exc-imds-token)
//	/_sim/faults     GET current, POST to inject, DELETE to reset (tests)
//	/_sim/instances  GET the live VMs (tests assert no orphans)
//	/_sim/dns        GET every DNS record
//
// The simulator writes what the real services own in production: vms and
// interfaces (computeapi), imds_tokens (IMDS) and principal_tokens (the
// token service), so k8sapi's own token checks run unchanged against it.
// Security groups and DNS records are the simulator's private state, in
// memory. Bearer tokens are checked like the token service does: hex
// SHA-256 looked up in principal_tokens, live (not expired, not revoked) and
// of scope 'principal'.
//
// It is our stand-in for the Excloud compute API, and honours what k8sapi
// relies on: a create (VM, security group, rule) with an Idempotency-Key
// header answers, for the same org and key, the object the first create made,
// never a second one (VMs keep the key in vms.idempotency_token, groups and
// rules in memory); a token of scope "service" acts for the org named in
// X-Excloud-Org-Id (the reconciler's credential). Faults can lose a create's
// answer after the VM is made, refuse deletes, and hide a VM's addresses
// for its first reads (a real platform attaches interfaces asynchronously).
//
// Images and instance types come from a small fixed table (catalog.go), a
// stand-in for the platform's catalogue, not a copy of it: a read of one it
// lacks answers 404, and a VM create naming one is refused with a 400.
//
// IMDS is per VM on the real platform (a link-local address answers for the
// VM calling it). Here the VM is named in the path, so the bootstrap
// userdata shim runs unchanged with EXC_IMDS_BASE_URL=$SIM_URL/imds/<vm_id>.
//
// IssuePrincipalToken and IssueIMDSToken seed tokens for the local stack and
// tests.
package simulator
