-- Scaling a cluster's control plane (issue 39, item 1): PATCH /clusters/{id}
-- with control_plane_count records the new count and a scaling, a durable
-- operation on the table of operations (migration 025: kind
-- control-plane-scaling, target the cluster, spec {from_count, to_count},
-- its lease and its end there) the reconciler drives one membership change
-- at a time, each new member joining etcd as a learner and promoted once
-- caught up. Only the count and the nodes it makes need columns here.
--
-- The count is the desired size (1, 3 or 5: the API's table holds it odd);
-- the CHECK only widens, so every stored row still holds.
ALTER TABLE kube_clusters DROP CONSTRAINT IF EXISTS kube_clusters_control_plane_count_check;
ALTER TABLE kube_clusters ADD CONSTRAINT kube_clusters_control_plane_count_check
    CHECK (control_plane_count BETWEEN 1 AND 5);

-- A node born by a scaling joins etcd as a learner (its bundle renders in
-- join mode, as a replacement's does); scaling_id is its operation.
ALTER TABLE kube_nodes
    ADD COLUMN IF NOT EXISTS scaling_id bigint REFERENCES operations (id);

-- ClustersFunction records the scaling and the new count (it creates no VM
-- and opens no key); ReconcilerFunction drives it: each new node's row, VM,
-- addresses and identities, the DNS name, the end (the operations grants
-- of migration 025 cover the scaling's row).
GRANT UPDATE (control_plane_count) ON kube_clusters TO k8sapi_clusters;
GRANT UPDATE (last_ordinal, control_plane_count) ON kube_clusters TO k8sapi_reconciler;
GRANT INSERT (scaling_id) ON kube_nodes TO k8sapi_reconciler;
