-- Replacing a control-plane node (issue 26, item 2): a new VM for the same
-- role, which joins etcd as a learner and is promoted once caught up, then
-- the old VM is deleted and its row removed. A replacement is a durable
-- operation like founding (migration 004): the intent (the replacement,
-- the new node's row, the old node marked retiring) is committed before any
-- remote call, and the cluster's lease (kube_clusters.lease_owner, held on
-- an active cluster only while a replacement is driven) fences every write;
-- the reconciler claims it and finishes it.
--
-- Numbered 018: it depends on 017 (kube_nodes.role, retiring, the grants).
CREATE TABLE IF NOT EXISTS node_replacements (
    id              bigserial   PRIMARY KEY,
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    -- The node being replaced (its row is removed once its VM is deleted,
    -- so these are plain values, kept for the record) and the new node.
    old_node_id     bigint      NOT NULL,
    old_vm_id       bigint      NOT NULL,
    old_node_name   text        NOT NULL,
    new_node_id     bigint,
    new_node_name   text        NOT NULL DEFAULT '',
    -- replacing: the reconciler drives it; failing: a replacement whose new
    -- node could not be made is being turned back (its VM deleted, the old
    -- node kept); done; failed (state_reason says why and what was kept).
    state           text        NOT NULL DEFAULT 'replacing'
        CHECK (state IN ('replacing', 'failing', 'done', 'failed')),
    state_reason    text        NOT NULL DEFAULT '' CHECK (octet_length(state_reason) <= 2048),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- One replacement at a time per cluster: a second would take a second
-- member out of etcd before the first one's learner was promoted.
CREATE UNIQUE INDEX IF NOT EXISTS node_replacements_one_live ON node_replacements (kube_cluster_id)
    WHERE state IN ('replacing', 'failing');

-- A node born by a replacement: its VM's create token derives from the
-- replacement's id (never reused) rather than its ordinal, which a removed
-- row can hand back.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS replacement_id bigint REFERENCES node_replacements (id);

-- ClustersFunction records a replacement (it creates no VM and opens no
-- key); ReconcilerFunction drives it: the new node's VM, addresses and
-- identities, the old VM's deletion, the old row's removal.
GRANT USAGE ON SEQUENCE node_replacements_id_seq TO k8sapi_clusters;
GRANT SELECT ON node_replacements TO k8sapi_clusters, k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, old_node_id, old_vm_id, old_node_name) ON node_replacements TO k8sapi_clusters;
GRANT UPDATE (new_node_id, new_node_name) ON node_replacements TO k8sapi_clusters;
GRANT UPDATE (state, state_reason, updated_at) ON node_replacements TO k8sapi_reconciler;
GRANT INSERT (replacement_id) ON kube_nodes TO k8sapi_clusters;
