-- Worker node pools (issue 25): an operator adds, scales and removes
-- groups of worker VMs of one instance type and image. A pool is a durable
-- operation like founding (migration 004): what k8sapi intends (the pool,
-- its intended nodes, the nodes to retire) is committed before any remote
-- call, every create is marked requested before it is sent and carries a
-- token, and a lease says which invocation drives the pool's operation and
-- until when. A lease that ran out means its holder died: the reconciler
-- claims the pool and finishes or undoes the operation, so no VM is left
-- without an owner.
--
-- Numbered 017: 016 belongs to another change; it depends only on 002
-- (kube_nodes), 004 (create_requested, addresses) and 011 (the roles).
CREATE TABLE IF NOT EXISTS node_pools (
    id                  bigserial   PRIMARY KEY,
    kube_cluster_id     bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    -- a DNS label, so node names built from it are valid host names
    name                text        NOT NULL CHECK (name ~ '^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$'),
    -- the desired number of workers; PATCH changes it
    count               integer     NOT NULL CHECK (count BETWEEN 0 AND 100),
    instance_type       text        NOT NULL CHECK (octet_length(instance_type) BETWEEN 1 AND 64),
    image_id            bigint      NOT NULL CHECK (image_id > 0),
    subnet_id           bigint      NOT NULL CHECK (subnet_id > 0),
    -- what the pool's Nodes carry once they join (labels: an object of
    -- strings; taints: an array of {key, value, effect})
    labels              jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    taints              jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(taints) = 'array'),
    -- creating, scaling, deleting: an operation runs (the lease says who
    -- drives it); failing: a create being undone; active, failed, deleted:
    -- settled. The rules are internal/founding's (pools.go).
    state               text        NOT NULL
        CHECK (state IN ('creating', 'active', 'scaling', 'deleting', 'failing', 'failed', 'deleted')),
    state_reason        text        NOT NULL DEFAULT '' CHECK (octet_length(state_reason) <= 2048),
    idempotency_key     text        CHECK (octet_length(idempotency_key) <= 255),
    request_fingerprint text,
    lease_owner         text,
    lease_until         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT node_pools_idempotency UNIQUE (kube_cluster_id, idempotency_key)
);
-- A name is the pool's handle in the API; a deleted pool frees it.
CREATE UNIQUE INDEX IF NOT EXISTS node_pools_live_name ON node_pools (kube_cluster_id, name)
    WHERE state <> 'deleted';
-- The reconciler's query: unfinished pool operations by lease expiry.
CREATE INDEX IF NOT EXISTS node_pools_unfinished ON node_pools (lease_until)
    WHERE state IN ('creating', 'scaling', 'deleting', 'failing');

-- A worker is a kube_nodes row of role worker with its pool. Its ordinal
-- comes after every node of the cluster at the time it is intended (so the
-- bridge CNI's per-ordinal pod subnet is its own); its VM's create token is
-- derived from the row's id, which is never reused. retiring: the node is
-- to be removed (scale-down, pool deletion, an undone create): its VM is
-- deleted, then its row. Control-plane rows are unchanged.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS role         text    NOT NULL DEFAULT 'control-plane'
        CHECK (role IN ('control-plane', 'worker')),
    ADD COLUMN IF NOT EXISTS node_pool_id bigint  REFERENCES node_pools (id),
    ADD COLUMN IF NOT EXISTS retiring     boolean NOT NULL DEFAULT false;
ALTER TABLE kube_nodes DROP CONSTRAINT IF EXISTS kube_nodes_worker_has_pool;
ALTER TABLE kube_nodes ADD CONSTRAINT kube_nodes_worker_has_pool
    CHECK ((role = 'worker') = (node_pool_id IS NOT NULL));
CREATE INDEX IF NOT EXISTS kube_nodes_pool ON kube_nodes (node_pool_id, ordinal) WHERE node_pool_id IS NOT NULL;

-- ClustersFunction serves the pool routes (it creates and deletes VMs and
-- opens no key); ReconcilerFunction finishes or undoes their operations.
-- Both intend and retire worker rows; deleting a row cascades to its
-- fetches and identities as the owner.
GRANT USAGE ON SEQUENCE node_pools_id_seq, kube_nodes_id_seq TO k8sapi_clusters, k8sapi_reconciler;
GRANT SELECT ON node_pools TO k8sapi_clusters, k8sapi_reconciler, k8sapi_create_cluster, k8sapi_get_bundle;
GRANT INSERT (kube_cluster_id, name, count, instance_type, image_id, subnet_id, labels, taints, state,
    idempotency_key, request_fingerprint, lease_owner, lease_until) ON node_pools TO k8sapi_clusters;
GRANT UPDATE (count, state, state_reason, lease_owner, lease_until, updated_at)
    ON node_pools TO k8sapi_clusters, k8sapi_reconciler;
-- A cluster's deletion ends its pools with it (store.EndOperation; a
-- founding's undo runs it too, from CreateClusterFunction).
GRANT UPDATE (state, lease_owner, lease_until, updated_at) ON node_pools TO k8sapi_create_cluster;
GRANT INSERT (kube_cluster_id, ordinal, node_name, role, node_pool_id) ON kube_nodes TO k8sapi_clusters, k8sapi_reconciler;
GRANT UPDATE (create_requested, vm_id, ipv4, ipv6, public_ipv4, retiring) ON kube_nodes TO k8sapi_clusters, k8sapi_reconciler;
GRANT DELETE ON kube_nodes TO k8sapi_clusters, k8sapi_reconciler;

-- A worker's keys are born on the worker: it sends certificate requests
-- (POST /bootstrap/worker/{vm_id}/csr) and k8sapi signs them once per
-- bootstrap window. certs_signed_window is the window (its
-- bootstrap_opened_at) whose requests were signed, certs_signed_at when:
-- a second request in the same window is refused, a re-open allows one.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS certs_signed_window timestamptz,
    ADD COLUMN IF NOT EXISTS certs_signed_at     timestamptz;
GRANT UPDATE (certs_signed_window, certs_signed_at) ON kube_nodes TO k8sapi_get_bundle;
