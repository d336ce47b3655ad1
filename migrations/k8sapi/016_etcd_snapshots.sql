-- etcd snapshots to object storage (issue 26, part 1; docs/ETCD-SNAPSHOTS.md).
--
-- One row per snapshot asked for: on demand by an operator
-- (POST /clusters/{id}/etcd-snapshots) or by the schedule (the reconciler,
-- when the cluster's newest snapshot is older than its interval). The row
-- names the node VM that takes it (chosen when the row is made: the
-- lowest-ordinal control-plane node that is Ready) and the one object key
-- it is uploaded to. The node asks for it (GET /bootstrap/control-plane/
-- {vm_id}/etcd-snapshot: a presigned PUT URL of that key only), uploads,
-- and reports size and SHA-256; k8sapi marks it uploaded only once a HEAD
-- of the object finds that size. A pending snapshot nobody reports within
-- an hour is marked failed by the reconciler.
--
-- The object key is derived from the row, never chosen by a caller:
-- etcd-snapshots/<cluster id>/<snapshot id>.db (the functions' S3 rights
-- are on the etcd-snapshots/ prefix only, template.yaml).
CREATE TABLE IF NOT EXISTS etcd_snapshots (
    id              bigserial   PRIMARY KEY,
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    trigger         text        NOT NULL CHECK (trigger IN ('scheduled', 'on_demand')),
    -- auth.Principal.Who of the operator, or "k8sapi:schedule".
    requested_by    text        NOT NULL CHECK (octet_length(requested_by) BETWEEN 1 AND 200),
    request_id      text        NOT NULL DEFAULT '' CHECK (octet_length(request_id) <= 200),
    node_vm_id      bigint      NOT NULL,
    object_key      text        GENERATED ALWAYS AS
        ('etcd-snapshots/' || kube_cluster_id::text || '/' || id::text || '.db') STORED,
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'uploaded', 'failed')),
    size_bytes      bigint      CHECK (size_bytes > 0),
    sha256          text        CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    failure         text        CHECK (octet_length(failure) <= 1000),
    requested_at    timestamptz NOT NULL,
    finished_at     timestamptz,
    CONSTRAINT etcd_snapshots_uploaded_has_digest
        CHECK ((state = 'uploaded') = (size_bytes IS NOT NULL AND sha256 IS NOT NULL)),
    CONSTRAINT etcd_snapshots_finished
        CHECK ((state = 'pending') = (finished_at IS NULL))
);
-- At most one snapshot of a cluster in flight: a second ask (the schedule
-- and an operator at once, or two operators) meets this index.
CREATE UNIQUE INDEX IF NOT EXISTS etcd_snapshots_one_pending ON etcd_snapshots (kube_cluster_id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS etcd_snapshots_newest ON etcd_snapshots (kube_cluster_id, requested_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS etcd_snapshots_pending_vm ON etcd_snapshots (node_vm_id) WHERE state = 'pending';

-- Each cluster's schedule: a snapshot when the newest is older than this
-- (default hourly); 0 turns the schedule off (on demand still works).
ALTER TABLE kube_clusters
    ADD COLUMN IF NOT EXISTS etcd_snapshot_interval_seconds integer NOT NULL DEFAULT 3600
        CHECK (etcd_snapshot_interval_seconds = 0 OR etcd_snapshot_interval_seconds BETWEEN 300 AND 604800);

-- ClustersFunction: an operator's on-demand snapshot and the list.
-- GetBundleFunction: the chosen node's upload URL and report, and the
-- audit events of both (the node is the principal). ReconcilerFunction:
-- the schedule (records scheduled snapshots, fails the overdue).
GRANT USAGE ON SEQUENCE etcd_snapshots_id_seq TO k8sapi_clusters, k8sapi_reconciler;
GRANT SELECT ON etcd_snapshots TO k8sapi_clusters, k8sapi_get_bundle, k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, trigger, requested_by, request_id, node_vm_id, requested_at)
    ON etcd_snapshots TO k8sapi_clusters, k8sapi_reconciler;
GRANT UPDATE (state, size_bytes, sha256, failure, finished_at) ON etcd_snapshots TO k8sapi_get_bundle;
GRANT UPDATE (state, failure, finished_at) ON etcd_snapshots TO k8sapi_reconciler;
GRANT USAGE ON SEQUENCE audit_events_id_seq TO k8sapi_get_bundle;
GRANT INSERT (kube_cluster_id, at, principal, action, resource, outcome, status, request_id)
    ON audit_events TO k8sapi_get_bundle;
