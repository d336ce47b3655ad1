// Package envelope seals secrets with KMS envelope encryption.
//
// One data key per cluster: KMS GenerateDataKey (AES_256) under the
// encryption context {org_id, cluster_id, purpose: k8sapi-cluster-secrets};
// the wrapped data key is stored once on the cluster row. Each secret is
// sealed locally with AES-256-GCM under that data key, with additional data
// naming the org, the cluster, the secret's purpose and its node, so a
// ciphertext moved to another row, purpose or cluster fails to open.
//
// Trade-off (written down as DESIGN.md asks): one data key per cluster means a
// bundle fetch costs one KMS Decrypt instead of one per key, and a warm
// container may reuse an unwrapped data key for a bounded age and use count
// (see Cache). The price: a leaked data key exposes every secret of that one
// cluster, not one secret; it never exposes another cluster's. Per-secret data
// keys would cost six Decrypts a fetch for little gain, since all of a
// cluster's keys travel together anyway.
//
// In: a KMS client (the two methods we call), a key id, a Scope.
// Out: sealed bytes (version || nonce || ciphertext) and opened plaintext.
package envelope
