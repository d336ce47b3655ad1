-- Founding a cluster from an etcd snapshot (issue 26, item 3;
-- docs/ETCD-SNAPSHOTS.md, "Restore"). A restored cluster is founded as any
-- other, but its trust (CAs, service-account key, Secrets encryption key)
-- is the snapshot's cluster's, re-sealed under its own data key, and its
-- control-plane nodes start etcd from the snapshot.
--
-- The snapshot's id, object key, size and SHA-256 are copied onto the new
-- cluster when it is founded: plain values, no foreign key, so what the
-- nodes restore from does not depend on the old cluster's rows (deleting
-- the old cluster shreds its keys and keeps its snapshot rows, but the new
-- cluster must not care either way).
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS restored_from_snapshot_id bigint,
    ADD COLUMN IF NOT EXISTS restore_object_key        text
        CHECK (restore_object_key ~ '^etcd-snapshots/[0-9]+/[0-9]+\.db$'),
    ADD COLUMN IF NOT EXISTS restore_size_bytes        bigint CHECK (restore_size_bytes > 0),
    ADD COLUMN IF NOT EXISTS restore_sha256            text CHECK (restore_sha256 ~ '^[0-9a-f]{64}$');
-- All four, or none.
ALTER TABLE kube_clusters DROP CONSTRAINT IF EXISTS kube_clusters_restore_complete;
ALTER TABLE kube_clusters ADD CONSTRAINT kube_clusters_restore_complete CHECK (
    (restored_from_snapshot_id IS NULL) = (restore_object_key IS NULL) AND
    (restored_from_snapshot_id IS NULL) = (restore_size_bytes IS NULL) AND
    (restored_from_snapshot_id IS NULL) = (restore_sha256 IS NULL));

-- CreateClusterFunction reads the snapshot a founding restores from and
-- records its copy on the new cluster.
GRANT INSERT (restored_from_snapshot_id, restore_object_key, restore_size_bytes, restore_sha256)
    ON kube_clusters TO k8sapi_create_cluster;
GRANT SELECT ON etcd_snapshots TO k8sapi_create_cluster;
