// Package gobench holds the CPU-only Go benchmarks of `make bench`: one
// bundle fetch rendered from a loaded topology, the trust of a 3-node
// founding, and sealing one key. Each runs with ECDSA P-256 and RSA-2048 as
// sub-benchmarks named alg=<algorithm>, so benchstat -col /alg shows the
// ratio. Nothing here touches Postgres or a real KMS.
package gobench
