-- The idempotency tokens founding sends with each create to the compute API
-- (a VM, the security group, its rules) were the cluster id and a purpose:
-- anyone who knew or guessed a cluster id could send a create under the
-- same token first, and founding would then adopt their object. They are now
-- an HMAC of the purpose under this random per-cluster key (founding's
-- tokenFor), written once with the cluster before any create is sent, so
-- every driver of the same founding (the function, its retry, the
-- reconciler) sends the same token for the same object.
--
-- NULL: a cluster founded before this migration; its operation keeps the
-- tokens it was created with (the old derivation), so a founding or deletion
-- in flight across the upgrade still finds what it created.
ALTER TABLE kube_clusters ADD COLUMN IF NOT EXISTS create_token_key bytea
    CONSTRAINT kube_clusters_create_token_key_length CHECK (octet_length(create_token_key) = 32);

-- Only founding writes it, once (migration 011's roles read it with the row).
GRANT INSERT (create_token_key) ON kube_clusters TO k8sapi_create_cluster;
