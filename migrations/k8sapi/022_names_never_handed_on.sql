-- Names and identities are never handed on (issue 43, item 2). A node's
-- certificates last a year and cannot be revoked, so a name they carry
-- must never name another node of the cluster, and a renewal must take
-- only a certificate k8sapi issued to that node.
--
-- last_ordinal is the cluster's high-water mark: every node ordinal (so
-- every node name) it ever handed out is at most this, and a new node
-- takes the next one. It only grows; the rows it was taken for may be
-- gone (a removed worker, a turned-back replacement's node).
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS last_ordinal integer NOT NULL DEFAULT 0 CHECK (last_ordinal >= 0);

-- Carried over for existing clusters from what their rows still say: the
-- nodes that exist, the control-plane count, and the names every
-- replacement recorded (its old and new nodes', "<prefix>-<ordinal>.
-- cluster-<id>.internal"). A worker removed before this migration left no
-- row: an ordinal above all of these may be handed out once more, the last
-- time.
UPDATE kube_clusters k SET last_ordinal = greatest(k.last_ordinal, k.control_plane_count,
    (SELECT coalesce(max(ordinal), 0) FROM kube_nodes WHERE kube_cluster_id = k.id),
    (SELECT coalesce(max(substring(n FROM '-([0-9]{1,9})\.cluster-[0-9]+\.internal$')::int), 0)
        FROM node_replacements r, unnest(ARRAY[r.old_node_name, r.new_node_name]) AS n
        WHERE r.kube_cluster_id = k.id));

-- Every certificate k8sapi issues to a node, by serial (lower-case hex):
-- control-plane identities at founding and in a bundle window, a worker's
-- signed requests, every renewal. A renewal takes a certificate only if
-- its serial is recorded for that node and identity. node_id is a plain
-- value: the record outlives the node's row (a retired node's serials are
-- what a revocation list would name).
CREATE TABLE IF NOT EXISTS node_certificates (
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    node_id         bigint      NOT NULL,
    identity        text        NOT NULL CHECK (octet_length(identity) BETWEEN 1 AND 64),
    serial          text        NOT NULL CHECK (serial ~ '^[0-9a-f]{1,64}$'),
    issued_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node_id, identity, serial)
);
CREATE INDEX IF NOT EXISTS node_certificates_cluster ON node_certificates (kube_cluster_id);

-- Founding commits the mark with its nodes; ClustersFunction moves it
-- when it intends a pool's workers or a replacement's node. Whoever issues
-- a node's certificates records them: founding and the reconciler (the
-- nodes' identities), the bundle function (a window's identities, a
-- worker's requests, renewals), which also reads them back at renewal.
GRANT INSERT (last_ordinal) ON kube_clusters TO k8sapi_create_cluster;
GRANT UPDATE (last_ordinal) ON kube_clusters TO k8sapi_clusters;
GRANT INSERT (kube_cluster_id, node_id, identity, serial)
    ON node_certificates TO k8sapi_create_cluster, k8sapi_reconciler, k8sapi_get_bundle;
GRANT SELECT ON node_certificates TO k8sapi_get_bundle;
