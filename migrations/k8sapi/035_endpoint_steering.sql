-- Endpoint steering (docs/CA-ROTATION.md, "The endpoint moves"). The
-- platform DNS API holds one A value per name, so a cluster's
-- control-plane name points at one node: the endpoint. A CA rotation asks
-- that node last in each phase and first moves the name to a node that
-- applied it, so no client of the name meets a restarting API server.
--
-- endpoint_vm_id is the node the name was last pointed at (NULL: never
-- recorded, the lowest-ordinal live control-plane node, as before this
-- migration; no backfill: that is what the name points at already).
-- endpoint_moved_at is when the name was last pointed at another node (or
-- a move was refused), endpoint_ttl_seconds the TTL of the record written
-- then: until endpoint_moved_at + endpoint_ttl_seconds a client may still
-- hold the old address in its cache, and the old node is not asked to
-- restart before that (store.rotationAsks).
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS endpoint_vm_id       bigint,
    ADD COLUMN IF NOT EXISTS endpoint_moved_at    timestamptz,
    ADD COLUMN IF NOT EXISTS endpoint_ttl_seconds integer CHECK (endpoint_ttl_seconds >= 0);

-- Whoever points the name records it: the founding (CreateClusterFunction,
-- ReconcilerFunction), replacements, scalings and rotations (the
-- reconciler), the same functions that record dns_configured.
GRANT UPDATE (endpoint_vm_id, endpoint_moved_at, endpoint_ttl_seconds) ON kube_clusters TO k8sapi_create_cluster, k8sapi_reconciler;
