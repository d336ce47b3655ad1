-- Numbered 025 on its branch, 027 in the lead's order.
-- Scaling a cluster's control plane (issue 39, item 1): PATCH /clusters/{id}
-- with control_plane_count records the new count and a scaling, a durable
-- operation the reconciler drives under the cluster's lease (as a
-- replacement, migration 018): one membership change at a time, each new
-- member joining etcd as a learner and promoted once caught up.
--
-- The count is the desired size (1, 3 or 5: the API's table holds it odd);
-- the CHECK only widens, so every stored row still holds.
ALTER TABLE kube_clusters DROP CONSTRAINT IF EXISTS kube_clusters_control_plane_count_check;
ALTER TABLE kube_clusters ADD CONSTRAINT kube_clusters_control_plane_count_check
    CHECK (control_plane_count BETWEEN 1 AND 5);

CREATE TABLE IF NOT EXISTS control_plane_scalings (
    id              bigserial   PRIMARY KEY,
    kube_cluster_id bigint      NOT NULL REFERENCES kube_clusters (id) ON DELETE CASCADE,
    from_count      integer     NOT NULL CHECK (from_count BETWEEN 1 AND 5),
    to_count        integer     NOT NULL CHECK (to_count BETWEEN 1 AND 5),
    -- scaling: the reconciler drives it; done; failed (state_reason says
    -- why and what was kept).
    state           text        NOT NULL DEFAULT 'scaling' CHECK (state IN ('scaling', 'done', 'failed')),
    state_reason    text        NOT NULL DEFAULT '' CHECK (octet_length(state_reason) <= 2048),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- One scaling at a time per cluster: two would change the membership at once.
CREATE UNIQUE INDEX IF NOT EXISTS control_plane_scalings_one_live ON control_plane_scalings (kube_cluster_id)
    WHERE state = 'scaling';

-- A node born by a scaling joins etcd as a learner (its bundle renders in
-- join mode, as a replacement's does).
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS scaling_id bigint REFERENCES control_plane_scalings (id);

-- ClustersFunction records the scaling and the new count (it creates no VM
-- and opens no key); ReconcilerFunction drives it: each new node's row, VM,
-- addresses and identities, the DNS name, the end.
GRANT USAGE ON SEQUENCE control_plane_scalings_id_seq TO k8sapi_clusters;
GRANT SELECT ON control_plane_scalings TO k8sapi_clusters, k8sapi_reconciler;
GRANT INSERT (kube_cluster_id, from_count, to_count) ON control_plane_scalings TO k8sapi_clusters;
GRANT UPDATE (control_plane_count) ON kube_clusters TO k8sapi_clusters;
GRANT UPDATE (state, state_reason, updated_at) ON control_plane_scalings TO k8sapi_reconciler;
GRANT UPDATE (last_ordinal, control_plane_count) ON kube_clusters TO k8sapi_reconciler;
GRANT INSERT (scaling_id) ON kube_nodes TO k8sapi_reconciler;
