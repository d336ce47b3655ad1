// Package store is the one place that knows SQL. It reads and writes
// k8sapi's tables (kube_clusters, kube_nodes, node_identities, node_pools,
// node_replacements, operations, ...) and reads the
// platform's tables (principal_tokens, imds_tokens, vms, interfaces) that
// other Excloud services own.
//
// In: a pgx pool. Out: plain row structs; sealed columns stay sealed here —
// opening them is internal/envelope's job.
package store
